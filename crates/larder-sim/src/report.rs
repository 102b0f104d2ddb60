//! Results: the text table and the JSON file.
//!
//! JSON is written by hand (a flat array of result objects): the tool only
//! ever writes it, so a serde dependency buys nothing.

use std::fmt::Write;

/// One simulated point.
#[derive(Clone, Debug)]
pub struct Row {
    pub workload: String,
    /// "÷4", "÷10", or a capacity description.
    pub capacity_label: String,
    pub capacity: usize,
    pub seg_items: usize,
    pub policy: String,
    pub requests: u64,
    pub miss_ratio: f64,
    /// Items copied by eviction (segment policies), per request.
    pub copies_per_request: f64,
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn to_json(command: &str, rows: &[Row]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{{\"command\":{},\"results\":[", json_str(command));
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            o,
            "  {{\"workload\":{},\"capacity_label\":{},\"capacity\":{},\"seg_items\":{},\"policy\":{},\"requests\":{},\"miss_ratio\":{:.6},\"copies_per_request\":{:.6}}}",
            json_str(&r.workload),
            json_str(&r.capacity_label),
            r.capacity,
            r.seg_items,
            json_str(&r.policy),
            r.requests,
            r.miss_ratio,
            r.copies_per_request
        );
        o.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    o.push_str("]}\n");
    o
}

/// A markdown table: one row per policy, one column per (workload, capacity).
pub fn table(rows: &[Row]) -> String {
    let mut cols: Vec<(String, String, usize, usize)> = Vec::new();
    let mut policies: Vec<String> = Vec::new();
    for r in rows {
        let c = (r.workload.clone(), r.capacity_label.clone(), r.capacity, r.seg_items);
        if !cols.contains(&c) {
            cols.push(c);
        }
        if !policies.contains(&r.policy) {
            policies.push(r.policy.clone());
        }
    }
    let mut o = String::from("| policy |");
    for (w, l, c, s) in &cols {
        let _ = write!(o, " {w} {l} ({c}, S={s}) |");
    }
    o.push_str("\n|---|");
    for _ in &cols {
        o.push_str("---:|");
    }
    o.push('\n');
    for p in &policies {
        let _ = write!(o, "| {p} |");
        for (w, l, c, s) in &cols {
            match rows.iter().find(|r| &r.policy == p && &r.workload == w && &r.capacity_label == l && r.capacity == *c && r.seg_items == *s) {
                Some(r) => {
                    let _ = write!(o, " {:.4} |", r.miss_ratio);
                }
                None => o.push_str(" – |"),
            }
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_table() {
        let r = Row {
            workload: "web07".into(),
            capacity_label: "÷4".into(),
            capacity: 5121,
            seg_items: 80,
            policy: "LRU".into(),
            requests: 10,
            miss_ratio: 0.25,
            copies_per_request: 0.0,
        };
        let j = to_json("larder-sim \"x\"", std::slice::from_ref(&r));
        assert!(j.contains("\"command\":\"larder-sim \\\"x\\\"\""));
        assert!(j.contains("\"miss_ratio\":0.250000"));
        let t = table(&[r]);
        assert!(t.contains("| LRU | 0.2500 |"), "{t}");
    }
}
