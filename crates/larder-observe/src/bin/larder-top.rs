//! `larder-top`: standalone `larder top` (see `larder_observe::top`).

#![forbid(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(larder_observe::top::run(&args));
}
