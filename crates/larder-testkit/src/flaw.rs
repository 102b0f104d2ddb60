//! The switch for deliberate bugs that a loom model must catch, shared by
//! every crate that plants them (`--cfg larder_loom` builds only): a model
//! that passes with its flaw switched on checks nothing.
//!
//! Each crate keeps only its own `Flaw` enum beside the code under test,
//! asks [`on`] at the one place a flaw changes, and its models run a check
//! [`with`] one switched on. The switch is per thread: loom runs a model's
//! threads on the thread that called it, so a flaw switched on around
//! `loom::model` is seen by every thread of the model and by nothing else
//! (tests run in parallel on other threads).
//!
//! At most one flaw is on at a time, of whichever crate's enum: `on` asks
//! for a value of its own type, so a store flaw is never mistaken for a
//! server flaw with the same discriminant.

use std::any::Any;
use std::cell::RefCell;

thread_local! {
    static ON: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Whether `flaw` is the one switched on in this thread.
pub fn on<F: PartialEq + 'static>(flaw: F) -> bool {
    ON.with(|c| c.borrow().as_ref().and_then(|b| b.downcast_ref::<F>()).is_some_and(|f| *f == flaw))
}

/// Runs `body` with `flaw` switched on in this thread, and off again
/// afterwards, even if `body` panics (as a model that catches it does).
pub fn with<F: 'static, R>(flaw: F, body: impl FnOnce() -> R) -> R {
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            ON.with(|c| *c.borrow_mut() = None);
        }
    }
    ON.with(|c| *c.borrow_mut() = Some(Box::new(flaw)));
    let _off = Off;
    body()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum A {
        One,
        Two,
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum B {
        One,
    }

    #[test]
    fn only_the_switched_flaw_of_its_own_type_is_on() {
        assert!(!on(A::One));
        with(A::One, || {
            assert!(on(A::One));
            assert!(!on(A::Two));
            assert!(!on(B::One), "same discriminant, other crate's enum");
        });
        assert!(!on(A::One));
    }

    #[test]
    fn a_panicking_body_switches_it_off() {
        let r = std::panic::catch_unwind(|| with(A::Two, || panic!("caught")));
        assert!(r.is_err());
        assert!(!on(A::Two));
    }
}
