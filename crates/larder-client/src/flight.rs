//! In-process single flight: the first caller of `get_or_load` for a key
//! leads (asks the server, maybe loads); every other caller for that key
//! meanwhile waits for the leader's result instead of asking again.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use crate::near::Value;

/// What followers receive: the value, or the leader's error as text.
pub type Outcome = Result<Value, String>;

#[derive(Default)]
pub struct Flights {
    map: Mutex<HashMap<String, Arc<Flight>>>,
}

#[derive(Default)]
pub struct Flight {
    done: Mutex<Option<Outcome>>,
    cv: Condvar,
}

pub enum Role<'a> {
    Leader(LeaderGuard<'a>),
    Follower(Arc<Flight>),
}

/// Held by the leader; publishes its outcome (or, if the leader unwinds, an
/// error) and removes the flight, so followers never wait forever.
pub struct LeaderGuard<'a> {
    flights: &'a Flights,
    key: String,
    flight: Arc<Flight>,
    finished: bool,
}

impl Flights {
    pub fn join(&self, key: &str) -> Role<'_> {
        let mut m = self.map.lock().unwrap();
        if let Some(f) = m.get(key) {
            return Role::Follower(f.clone());
        }
        let flight = Arc::new(Flight::default());
        m.insert(key.to_string(), flight.clone());
        Role::Leader(LeaderGuard { flights: self, key: key.to_string(), flight, finished: false })
    }

    #[cfg(test)]
    pub fn in_flight(&self) -> usize {
        self.map.lock().unwrap().len()
    }
}

impl LeaderGuard<'_> {
    pub fn finish(mut self, outcome: Outcome) {
        self.publish(outcome);
    }

    fn publish(&mut self, outcome: Outcome) {
        self.finished = true;
        self.flights.map.lock().unwrap().remove(&self.key);
        *self.flight.done.lock().unwrap() = Some(outcome);
        self.flight.cv.notify_all();
    }
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.publish(Err("the loading caller panicked".into()));
        }
    }
}

impl Flight {
    pub fn wait(&self) -> Outcome {
        let mut d = self.done.lock().unwrap();
        loop {
            if let Some(o) = d.as_ref() {
                return o.clone();
            }
            d = self.cv.wait(d).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn followers_get_the_leaders_outcome() {
        let f = Flights::default();
        let Role::Leader(g) = f.join("k") else { panic!("first caller leads") };
        let Role::Follower(fl) = f.join("k") else { panic!("second follows") };
        let t = std::thread::spawn(move || fl.wait());
        g.finish(Ok(Arc::from(&b"v"[..])));
        assert_eq!(&*t.join().unwrap().unwrap(), b"v");
        assert_eq!(f.in_flight(), 0);
        assert!(matches!(f.join("k"), Role::Leader(_)));
    }

    #[test]
    fn a_dropped_leader_releases_followers() {
        let f = Flights::default();
        let g = f.join("k");
        let Role::Follower(fl) = f.join("k") else { panic!() };
        drop(g);
        assert!(fl.wait().is_err());
    }
}
