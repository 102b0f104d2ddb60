//! What a test does when something it needs from outside the workspace (the
//! reference memcached, a Python with the right packages) is not installed.
//!
//! On a developer's machine a missing dependency should not make the whole
//! suite red, so the test skips, but loudly: a `SKIPPED:` line on stderr
//! that says what is missing and how to get it. Under CI it must fail: a
//! comparison against memcached that "passes" because memcached was never
//! started proves nothing, and a green CI run would hide it. `scripts/test`
//! installs every dependency before running the tests, so a missing one in
//! CI is a broken machine or script, worth a red run.
//!
//! The rule, in one place ([`require_or_skip`]):
//!
//! * `CI` set (CI systems set `CI=true`) or `LARDER_REQUIRE_ALL=1`: a missing
//!   dependency panics, naming it and how to install it;
//! * otherwise: `SKIPPED: <test>: <what is missing> (<how to install>)` on
//!   stderr, and the caller skips what needs it.
//!
//! `CI` or `LARDER_REQUIRE_ALL` set to an empty string, `0` or `false` counts
//! as unset, so `CI=false cargo test` on a laptop behaves like a laptop.

use std::io::Write;

/// Passes `found` through when it is `Some`. When it is `None`, panics under
/// CI (see the module documentation) and otherwise prints a `SKIPPED:` line
/// and returns `None`, so the caller can skip what needs the dependency:
///
/// ```no_run
/// # fn find_python() -> Option<String> { None }
/// let Some(py) = larder_testkit::require_or_skip(find_python(), "a Python with pytest", "scripts/test creates tests/.work/venv") else {
///     return;
/// };
/// ```
///
/// `missing` says what was looked for and where; `install` how to get it.
pub fn require_or_skip<T>(found: Option<T>, missing: &str, install: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    let test = std::thread::current().name().unwrap_or("<unnamed test>").to_string();
    let ci = std::env::var("CI").ok();
    let require_all = std::env::var("LARDER_REQUIRE_ALL").ok();
    match decide(ci.as_deref(), require_all.as_deref()) {
        Missing::Fail(why) => panic!("{test}: missing {missing}; {why} makes every test dependency required. Install it: {install}"),
        Missing::Skip => {
            // Straight to the process's stderr: `eprintln!` in a test is
            // captured and shown only if the test fails, and a skipped test
            // passes, so the line would never be seen.
            let line = format!("SKIPPED: {test}: missing {missing} (install: {install}; with CI=true or LARDER_REQUIRE_ALL=1 this fails)\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            None
        }
    }
}

/// What to do about a missing dependency.
#[derive(Debug, PartialEq)]
enum Missing {
    /// Panic; the string names the variable that asked for it.
    Fail(&'static str),
    Skip,
}

/// The rule, given the values of `CI` and `LARDER_REQUIRE_ALL`.
fn decide(ci: Option<&str>, require_all: Option<&str>) -> Missing {
    if is_set(require_all) {
        Missing::Fail("LARDER_REQUIRE_ALL")
    } else if is_set(ci) {
        Missing::Fail("CI")
    } else {
        Missing::Skip
    }
}

fn is_set(v: Option<&str>) -> bool {
    matches!(v, Some(v) if !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_or_require_all_make_a_missing_dependency_fatal() {
        assert_eq!(decide(None, None), Missing::Skip);
        assert_eq!(decide(Some("true"), None), Missing::Fail("CI"));
        assert_eq!(decide(Some("1"), None), Missing::Fail("CI"));
        assert_eq!(decide(None, Some("1")), Missing::Fail("LARDER_REQUIRE_ALL"));
        assert_eq!(decide(Some("false"), Some("1")), Missing::Fail("LARDER_REQUIRE_ALL"));
        for off in ["", "0", "false", "FALSE"] {
            assert_eq!(decide(Some(off), Some(off)), Missing::Skip, "{off:?}");
        }
    }

    #[test]
    fn a_present_dependency_passes_through_whatever_the_environment() {
        assert_eq!(require_or_skip(Some(5), "five", "nothing to install"), Some(5));
    }
}
