//! `larder`: a memcached-compatible cache server (and, as `larder top`, a
//! live terminal view of one: larder-observe's `top` client).
//!
//! Start-up order matters and follows memcached: parse flags, detach (`-d`)
//! before any thread exists, raise the descriptor limit for `-c`, bind the
//! sockets (possibly privileged ports), drop privileges (`-u`), write the pid
//! file, then start the workers (the library, `larder_server::start`). A
//! signal thread turns SIGTERM/SIGINT into a shutdown request, the same one
//! the `shutdown` command makes, and SIGUSR1 into a graceful one that, with
//! `-e`, saves the items for a warm restart (memcached saves on SIGUSR1
//! only), and SIGHUP into a reload of the `-Y` authfile and of the `-Z`
//! certificate, key and CA files (as memcached 1.6.40 and later);
//! the main thread waits for it and tears down.
//!
//! Root: as memcached, larder refuses to start as root without `-u`
//! (exit 64). `-u root` is the way to stay root on purpose (test rigs and
//! containers do): memcached accepts it, switches to uid 0, and so does
//! larder.

use larder_server::{Command, Settings, Shutdown};

#[cfg(feature = "alloc-count")]
#[global_allocator]
static GLOBAL: larder_server::alloc_count::Counting = larder_server::alloc_count::Counting;
use std::process::exit;

/// sysexits.h EX_USAGE / EX_NOUSER / EX_OSERR, as memcached uses.
const EX_USAGE: i32 = 64;
const EX_NOUSER: i32 = 67;
const EX_OSERR: i32 = 71;

fn main() {
    // `larder top ...`: the live terminal view of a running server.
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("top") {
        let rest: Vec<String> = args.skip(1).collect();
        exit(larder_observe::top::run(&rest));
    }
    let settings = match larder_server::parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(s)) => s,
        Ok(Command::Help) => {
            print!("{}", larder_server::help_text());
            return;
        }
        Ok(Command::Version) => {
            println!("larder {} (memcached {} compatible)", env!("CARGO_PKG_VERSION"), larder_server::counters::VERSION);
            return;
        }
        Err(e) => {
            eprintln!("{e}");
            // memcached 1.6.38's status for the same error (1 or 64).
            exit(e.1);
        }
    };
    for w in &settings.warnings {
        eprintln!("larder: warning: {w}");
    }
    // Refused before anything is bound or loaded, as memcached does.
    if running_as_root() && settings.user.as_deref().unwrap_or("").is_empty() {
        eprintln!("can't run as root without the -u switch");
        exit(EX_USAGE);
    }
    // memcached checks the authfile at start-up and exits 1 on a bad one
    // (the library reads it again when it prepares the server).
    if let Some(path) = &settings.auth_file {
        if let Err(e) = larder_server::auth::authfile::AuthFile::load(path) {
            eprintln!("{e}");
            exit(1);
        }
    }
    // The admin listener's credentials: read now, as root if started so, for
    // the listener to take after -u drops privileges; a bad file is a
    // start-up error naming it, not a failure of the unprivileged start.
    if let Some(path) = settings.observe.metrics_auth_file.as_deref().filter(|_| settings.observe.metrics_port != 0) {
        if let Err(e) = larder_server::admin::auth::AuthFile::preload(path) {
            eprintln!("{e}");
            exit(EX_USAGE);
        }
    }
    // memcached initialises SASL here and exits 1 when it cannot.
    if settings.sasl {
        if let Err(e) = larder_server::auth::cyrus::init(settings.verbose) {
            eprintln!("{e}");
            exit(1);
        }
    }
    // memcached loads the certificates before it binds, and a failure is a
    // usage error (exit 64) with OpenSSL's message; ours names the file too.
    if settings.tls.enabled {
        if let Err(e) = larder_server::config::tls::TlsContext::new(&settings.tls, 0) {
            eprintln!("{e}");
            exit(EX_USAGE);
        }
    }
    if let Some(user) = settings.user.as_deref().filter(|_| running_as_root()) {
        if lookup_user(user).is_none() {
            eprintln!("can't find the user {user} to switch to");
            exit(EX_NOUSER);
        }
    }
    if let Err(e) = run(settings) {
        eprintln!("{e}");
        exit(EX_OSERR);
    }
}

fn run(settings: Settings) -> Result<(), String> {
    tune_malloc();
    if settings.daemonize {
        daemonize(settings.verbose > 0)?;
    }
    raise_fd_limit(settings.max_connections);
    if settings.coredumps {
        raise_core_limit();
    }
    // Bind (possibly privileged ports) before dropping privileges.
    let prepared = larder_server::prepare(settings.clone())?;
    drop_privileges(&settings)?;
    if let Some(pidfile) = &settings.pidfile {
        if settings.daemonize {
            std::fs::write(pidfile, format!("{}\n", std::process::id()))
                .map_err(|e| format!("Could not open the pid file {pidfile} for writing: {e}"))?;
        }
    }
    // Before any thread exists, so every thread inherits the mask and only
    // the signal thread takes them.
    let signals = block_signals();
    let shutdown = Shutdown::new();
    let running = larder_server::start(prepared, shutdown.clone())?;
    let reloader = running.reloader();
    let verbose = settings.verbose > 0;
    std::thread::Builder::new()
        .name("larder-signals".into())
        .spawn(move || {
            let mut sig = wait_for_signal(&signals);
            while sig == libc::SIGHUP {
                // What failed to reload stays as it was; say why.
                for line in reloader.reload() {
                    eprintln!("larder: {line}");
                }
                sig = wait_for_signal(&signals);
            }
            if verbose {
                eprintln!("larder: signal {sig} received, shutting down");
            }
            if sig == libc::SIGUSR1 {
                shutdown.request_graceful();
            } else {
                shutdown.request();
            }
        })
        .map_err(|e| format!("larder: cannot start the signal thread: {e}"))?;
    let result = running.wait_and_stop();
    if let (Some(pidfile), true) = (&settings.pidfile, settings.daemonize) {
        let _ = std::fs::remove_file(pidfile);
    }
    result
}

/// Serve buffers of 64 KiB and more (a large value's input or output) from
/// their own mappings, given back to the system when freed. glibc's default
/// threshold rises after such a buffer is freed, so later ones came from the
/// heap and a thousand connections that each once moved a 250 KB value kept
/// 260 MB resident after going idle (and after closing).
fn tune_malloc() {
    // SAFETY: mallopt only changes allocator parameters; called before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 * 1024);
    }
}

/// Detach from the terminal: fork, new session, stdio to /dev/null (unless
/// verbose, where memcached keeps stderr for its messages).
fn daemonize(keep_stderr: bool) -> Result<(), String> {
    // SAFETY: called before any thread is spawned, so fork is safe; each
    // libc call's result is checked.
    unsafe {
        match libc::fork() {
            -1 => return Err(format!("larder: fork failed: {}", std::io::Error::last_os_error())),
            0 => {}
            _ => libc::_exit(0),
        }
        if libc::setsid() == -1 {
            return Err(format!("larder: setsid failed: {}", std::io::Error::last_os_error()));
        }
        let _ = libc::chdir(c"/".as_ptr());
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if fd >= 0 {
            libc::dup2(fd, 0);
            libc::dup2(fd, 1);
            if !keep_stderr {
                libc::dup2(fd, 2);
            }
            if fd > 2 {
                libc::close(fd);
            }
        }
    }
    Ok(())
}

/// Make room for `-c` connections plus the server's own descriptors.
fn raise_fd_limit(max_connections: usize) {
    let want = (max_connections + 64) as libc::rlim_t;
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 || rl.rlim_cur >= want {
            return;
        }
        rl.rlim_cur = want.min(rl.rlim_max);
        if rl.rlim_cur < want {
            // Root may raise the hard limit too.
            let raised = libc::rlimit { rlim_cur: want, rlim_max: want.max(rl.rlim_max) };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return;
            }
        }
        if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want {
            eprintln!("larder: warning: descriptor limit {} is below -c {} + 64", rl.rlim_cur, max_connections);
        }
    }
}

fn raise_core_limit() {
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_CORE, &mut rl) == 0 {
            rl.rlim_cur = rl.rlim_max;
            libc::setrlimit(libc::RLIMIT_CORE, &rl);
        }
    }
}

/// Real or effective uid 0 (memcached checks both).
fn running_as_root() -> bool {
    // SAFETY: getuid/geteuid have no preconditions.
    unsafe { libc::getuid() == 0 || libc::geteuid() == 0 }
}

/// The uid and gid of `user`, if it exists.
fn lookup_user(user: &str) -> Option<(libc::uid_t, libc::gid_t)> {
    let name = std::ffi::CString::new(user).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; we read
    // it at once, before any other call that could overwrite it.
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// `-u`: when started as root, become that user. `main` already refused
/// root without `-u` and an unknown user. `-u root` goes through the same
/// calls and stays uid 0, but without root's supplementary groups, exactly
/// as memcached does.
fn drop_privileges(s: &Settings) -> Result<(), String> {
    if !running_as_root() {
        return Ok(());
    }
    let Some(user) = &s.user else {
        return Ok(());
    };
    let (uid, gid) = lookup_user(user).ok_or_else(|| format!("can't find the user {user} to switch to"))?;
    // SAFETY: plain syscalls on values we own; each result is checked.
    unsafe {
        // EPERM: already without the privilege to change groups; memcached
        // goes on in that case.
        if libc::setgroups(0, std::ptr::null()) != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
            return Err(format!("failed to drop supplementary groups: {}", std::io::Error::last_os_error()));
        }
        if libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
            return Err(format!("failed to assume identity of user {user}"));
        }
    }
    Ok(())
}

/// Block the shutdown signals in every thread (threads inherit the mask), so
/// the main thread can take them synchronously with sigwait.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a set we own; pthread_sigmask on the
    // calling thread before others exist.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        // A client vanishing mid-write must not kill the server.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        set
    }
}

fn wait_for_signal(set: &libc::sigset_t) -> i32 {
    let mut sig: libc::c_int = 0;
    loop {
        // SAFETY: sigwait with a valid, initialised set and out-pointer.
        let rc = unsafe { libc::sigwait(set, &mut sig) };
        if rc == 0 {
            return sig;
        }
    }
}
