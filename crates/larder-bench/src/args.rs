//! Command-line flags, parsed by hand (`--name value`, `--name=value`, `--switch`): the tool
//! has a few dozen flags and no nested structure, which does not justify a dependency.

use std::collections::BTreeMap;

pub struct Args {
    values: BTreeMap<String, Option<String>>,
    used: std::cell::RefCell<Vec<String>>,
}

/// Flags that take no value.
const SWITCHES: &[&str] = &["smoke", "json", "help", "no-chart", "quiet", "cold"];

impl Args {
    pub fn parse(argv: &[String]) -> Result<Args, String> {
        let mut values = BTreeMap::new();
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            let Some(name) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument {a:?} (flags look like --name value)"));
            };
            if let Some((k, v)) = name.split_once('=') {
                values.insert(k.to_string(), Some(v.to_string()));
            } else if SWITCHES.contains(&name) {
                values.insert(name.to_string(), None);
            } else {
                let v = argv.get(i + 1).ok_or_else(|| format!("--{name} needs a value"))?;
                values.insert(name.to_string(), Some(v.clone()));
                i += 1;
            }
            i += 1;
        }
        Ok(Args { values, used: Default::default() })
    }

    fn mark(&self, name: &str) {
        self.used.borrow_mut().push(name.to_string());
    }

    pub fn flag(&self, name: &str) -> bool {
        self.mark(name);
        self.values.contains_key(name)
    }

    pub fn str(&self, name: &str) -> Option<String> {
        self.mark(name);
        self.values.get(name).cloned().flatten()
    }

    pub fn parse_num<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.str(name) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| format!("--{name}: bad number {v:?}")),
        }
    }

    /// Seconds, accepting `1.5`, `500ms`, `2s`.
    pub fn seconds(&self, name: &str) -> Result<Option<f64>, String> {
        match self.str(name) {
            None => Ok(None),
            Some(v) => {
                let (num, mult) = if let Some(n) = v.strip_suffix("ms") {
                    (n, 0.001)
                } else if let Some(n) = v.strip_suffix('s') {
                    (n, 1.0)
                } else {
                    (v.as_str(), 1.0)
                };
                num.parse::<f64>().map(|x| Some(x * mult)).map_err(|_| format!("--{name}: bad duration {v:?}"))
            }
        }
    }

    /// Errors on flags nobody asked about (typos must not be ignored silently).
    pub fn check_unused(&self) -> Result<(), String> {
        let used = self.used.borrow();
        for k in self.values.keys() {
            if !used.iter().any(|u| u == k) {
                return Err(format!("unknown flag --{k}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags() {
        let argv: Vec<String> = ["--server", "1.2.3.4:5", "--smoke", "--duration=500ms", "--connections", "7"].iter().map(|s| s.to_string()).collect();
        let a = Args::parse(&argv).unwrap();
        assert_eq!(a.str("server").as_deref(), Some("1.2.3.4:5"));
        assert!(a.flag("smoke"));
        assert_eq!(a.seconds("duration").unwrap(), Some(0.5));
        assert_eq!(a.parse_num::<usize>("connections").unwrap(), Some(7));
        a.check_unused().unwrap();
        let b = Args::parse(&["--bogus".to_string(), "1".to_string()]).unwrap();
        assert!(b.check_unused().is_err());
        assert!(Args::parse(&["--server".to_string()]).is_err());
    }
}
