//! `-S`: Cyrus SASL, the library memcached authenticates binary-protocol
//! clients with, loaded at run time.
//!
//! memcached links `libsasl2`; larder opens `libsasl2.so.2` with `dlopen`
//! only when `-S` is given, so building larder needs no SASL headers and a
//! server without `-S` never touches the library. Because it is the real
//! library, an operator's existing setup works unchanged: the same
//! `memcached.conf` (`mech_list`, `sasldb_path`, ...) found the same way
//! (`SASL_CONF_PATH`, else `/etc/sasl/memcached.conf` or
//! `/etc/sasl2/memcached.conf`, see [`conf_path`]), the same sasldb written by
//! `saslpasswd2 -a memcached`, the same mechanisms (whatever plugins are
//! installed: Debian's `libsasl2-modules` has PLAIN and CRAM-MD5).
//!
//! What is bound, as memcached's `sasl_defs.c` uses it: `sasl_server_init`
//! with the application name `memcached` (which names the config file) and
//! two callbacks, the config path and logging; per connection
//! `sasl_server_new` (service `memcached`, the host name as the user
//! realm), `sasl_listmech`, `sasl_server_start`, `sasl_server_step` and
//! `sasl_dispose`. `sasl_done` is not called: memcached does not either, a
//! worker may still hold connections when the process ends, and the
//! library is initialised once per process.
//!
//! Thread safety: Cyrus's own locking is a no-op unless the application
//! installs mutex functions. Rather than rely on which of its globals (the
//! plugin list, the sasldb handle) a call touches, every call into the
//! library is made under one process-wide lock ([`CALLS`]). SASL happens
//! once per connection, so the lock costs nothing on the request path; the
//! price is that a slow authentication backend (saslauthd) delays other
//! connections' authentications, not their requests.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

const SASL_OK: c_int = 0;
const SASL_CONTINUE: c_int = 1;
const SASL_FAIL: c_int = -1;
const SASL_BADPARAM: c_int = -7;
const SASL_CB_LIST_END: c_ulong = 0;
const SASL_CB_LOG: c_ulong = 2;
const SASL_CB_GETCONFPATH: c_ulong = 5;
// Log levels (sasl.h): memcached shows WARN and FAIL with -v, the rest
// but NONE with -vv.
const SASL_LOG_NONE: c_int = 0;
const SASL_LOG_FAIL: c_int = 2;
const SASL_LOG_WARN: c_int = 3;
const SASL_LOG_NOTE: c_int = 4;
const SASL_LOG_PASS: c_int = 7;

/// The library's soname on Debian (and most Linux distributions).
pub const LIBRARY: &str = "libsasl2.so.2";
/// The application name: Cyrus reads `<path>/memcached.conf`.
const APP_NAME: &CStr = c"memcached";
/// Where memcached looks for its config without `SASL_CONF_PATH`.
const LOCATIONS: [(&str, &str, &str); 2] = [
    ("/etc/sasl/memcached.conf", "/etc/sasl/memcached.conf/memcached.conf", "/etc/sasl"),
    ("/etc/sasl2/memcached.conf", "/etc/sasl2/memcached.conf/memcached.conf", "/etc/sasl2"),
];

/// `sasl_callback_t`.
#[repr(C)]
struct Callback {
    id: c_ulong,
    proc_: Option<unsafe extern "C" fn() -> c_int>,
    context: *mut c_void,
}

/// `sasl_conn_t`, opaque.
#[repr(C)]
struct RawConn {
    _private: [u8; 0],
}

type ServerInit = unsafe extern "C" fn(*const Callback, *const c_char) -> c_int;
type ServerNew = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const Callback,
    c_uint,
    *mut *mut RawConn,
) -> c_int;
type ListMech = unsafe extern "C" fn(
    *mut RawConn,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *mut *const c_char,
    *mut c_uint,
    *mut c_int,
) -> c_int;
type ServerStart =
    unsafe extern "C" fn(*mut RawConn, *const c_char, *const c_char, c_uint, *mut *const c_char, *mut c_uint) -> c_int;
type ServerStep = unsafe extern "C" fn(*mut RawConn, *const c_char, c_uint, *mut *const c_char, *mut c_uint) -> c_int;
type Dispose = unsafe extern "C" fn(*mut *mut RawConn);

/// The initialised library: the per-connection entry points.
pub struct Cyrus {
    server_new: ServerNew,
    listmech: ListMech,
    start: ServerStart,
    step: ServerStep,
    dispose: Dispose,
    /// memcached's `my_sasl_hostname`: passed as the user realm.
    hostname: Option<std::ffi::CString>,
}

/// Every call into the library holds this (see the module docs).
static CALLS: Mutex<()> = Mutex::new(());
/// The library, initialised by the first [`init`] of the process.
static CYRUS: OnceLock<Result<Cyrus, String>> = OnceLock::new();
/// `-v` level for the callbacks (set by [`init`]).
static VERBOSE: AtomicU32 = AtomicU32::new(0);

fn lock() -> std::sync::MutexGuard<'static, ()> {
    CALLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Load `libsasl2.so.2` and initialise it as memcached does. Once per
/// process; later calls return the first outcome. Errors are the start-up
/// message: the library missing, or memcached's `Error initializing sasl.`
/// (for example when no config path is found).
pub fn init(verbose: u32) -> Result<&'static Cyrus, String> {
    VERBOSE.store(verbose, Ordering::Relaxed);
    CYRUS.get_or_init(|| load(LIBRARY, verbose)).as_ref().map_err(Clone::clone)
}

/// dlopen + dlsym of one name.
fn symbol(lib: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: `lib` is a live handle from dlopen (never closed), `name` is
    // NUL-terminated; dlsym only reads it.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(format!("larder: -S: {LIBRARY} has no {}", name.to_string_lossy()));
    }
    Ok(p)
}

/// Open `library` (always [`LIBRARY`] but in tests), bind and initialise it.
fn load(library: &str, verbose: u32) -> Result<Cyrus, String> {
    let soname = std::ffi::CString::new(library).map_err(|_| format!("larder: -S: bad library name {library:?}"))?;
    // SAFETY: dlopen takes a NUL-terminated name; the handle is kept for
    // the life of the process (never dlclosed), so the function pointers
    // taken from it stay valid.
    let lib = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if lib.is_null() {
        // SAFETY: dlerror returns NULL or a NUL-terminated message owned by
        // the C library, read before any other dl call on this thread.
        let why = unsafe {
            let e = libc::dlerror();
            if e.is_null() { String::new() } else { CStr::from_ptr(e).to_string_lossy().into_owned() }
        };
        return Err(format!(
            "larder: -S needs Cyrus SASL's {library}, which could not be loaded ({why}); \
             on Debian: apt-get install libsasl2-2 libsasl2-modules (and sasl2-bin for saslpasswd2)"
        ));
    }
    // SAFETY (all transmutes below): each symbol is the Cyrus function of
    // that name, whose C prototype in sasl.h the corresponding type alias
    // spells out argument by argument.
    let (cyrus, server_init) = unsafe {
        let cyrus = Cyrus {
            server_new: std::mem::transmute::<*mut c_void, ServerNew>(symbol(lib, c"sasl_server_new")?),
            listmech: std::mem::transmute::<*mut c_void, ListMech>(symbol(lib, c"sasl_listmech")?),
            start: std::mem::transmute::<*mut c_void, ServerStart>(symbol(lib, c"sasl_server_start")?),
            step: std::mem::transmute::<*mut c_void, ServerStep>(symbol(lib, c"sasl_server_step")?),
            dispose: std::mem::transmute::<*mut c_void, Dispose>(symbol(lib, c"sasl_dispose")?),
            hostname: hostname(),
        };
        (cyrus, std::mem::transmute::<*mut c_void, ServerInit>(symbol(lib, c"sasl_server_init")?))
    };
    if cyrus.hostname.is_none() && verbose > 0 {
        eprintln!("Error discovering hostname for SASL");
    }
    // The library keeps the pointer (its callbacks are consulted later,
    // e.g. for logging), so the list lives for the rest of the process.
    let callbacks: &'static [Callback; 3] = Box::leak(Box::new([
        Callback {
            id: SASL_CB_LOG,
            // SAFETY: Cyrus calls a callback through the type its id
            // implies (sasl_log_t here); the generic `int (*)(void)` slot is
            // how sasl.h stores every callback.
            proc_: Some(unsafe {
                std::mem::transmute::<unsafe extern "C" fn(*mut c_void, c_int, *const c_char) -> c_int, unsafe extern "C" fn() -> c_int>(
                    log_callback,
                )
            }),
            context: std::ptr::null_mut(),
        },
        Callback {
            id: SASL_CB_GETCONFPATH,
            // SAFETY: as above, for sasl_getconfpath_t.
            proc_: Some(unsafe {
                std::mem::transmute::<unsafe extern "C" fn(*mut c_void, *mut *mut c_char) -> c_int, unsafe extern "C" fn() -> c_int>(
                    conf_path_callback,
                )
            }),
            context: std::ptr::null_mut(),
        },
        Callback { id: SASL_CB_LIST_END, proc_: None, context: std::ptr::null_mut() },
    ]));
    let _calls = lock();
    // SAFETY: the callback list is terminated by SASL_CB_LIST_END and lives
    // forever; the application name is a NUL-terminated static.
    let rc = unsafe { server_init(callbacks.as_ptr(), APP_NAME.as_ptr()) };
    if rc != SASL_OK {
        return Err("Error initializing sasl.".into());
    }
    if verbose > 0 {
        eprintln!("Initialized SASL.");
    }
    Ok(cyrus)
}

fn hostname() -> Option<std::ffi::CString> {
    let mut buf = [0u8; 1025];
    // SAFETY: gethostname writes at most len bytes into the buffer; one
    // byte is kept back so the result is always NUL-terminated.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 || buf[0] == 0 {
        return None;
    }
    CStr::from_bytes_until_nul(&buf).ok().map(CStr::to_owned)
}

/// Where Cyrus should look for `memcached.conf`, as memcached decides it:
/// `SASL_CONF_PATH` if set; else the first of `/etc/sasl`, `/etc/sasl2` that
/// has a `memcached.conf` (a file, or a directory holding one, which is
/// then the path). `None` makes initialisation fail, as in memcached.
pub fn conf_path(env: Option<String>, exists: impl Fn(&str) -> bool) -> Option<String> {
    if env.is_some() {
        return env;
    }
    for (file, nested, dir) in LOCATIONS {
        if exists(nested) {
            return Some(file.to_string());
        }
        if exists(file) {
            return Some(dir.to_string());
        }
    }
    None
}

/// A line on stderr from inside a callback: never `eprintln!`, whose panic
/// on a failed write could not unwind through Cyrus (it would abort).
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `SASL_CB_GETCONFPATH`: sasl.h says the path is heap-allocated and the
/// library frees it, so it is handed over from `strdup`.
unsafe extern "C" fn conf_path_callback(_context: *mut c_void, path: *mut *mut c_char) -> c_int {
    let found = conf_path(std::env::var("SASL_CONF_PATH").ok(), |p| std::path::Path::new(p).exists());
    let verbose = VERBOSE.load(Ordering::Relaxed) > 0;
    match found.and_then(|p| std::ffi::CString::new(p).ok()) {
        Some(p) => {
            if verbose {
                say(format_args!("Reading configuration from: <{}>", p.to_string_lossy()));
            }
            // SAFETY: `path` is the library's out-pointer; strdup returns a
            // malloc'd copy (or NULL) that the library will free.
            unsafe {
                *path = libc::strdup(p.as_ptr());
                if (*path).is_null() { SASL_FAIL } else { SASL_OK }
            }
        }
        None => {
            if verbose {
                say(format_args!("Failed to locate a config path"));
            }
            SASL_FAIL
        }
    }
}

/// `SASL_CB_LOG`, with memcached's filter and format.
unsafe extern "C" fn log_callback(_context: *mut c_void, level: c_int, message: *const c_char) -> c_int {
    let verbose = VERBOSE.load(Ordering::Relaxed);
    let shown = match level {
        SASL_LOG_NONE => false,
        SASL_LOG_NOTE..=SASL_LOG_PASS => verbose >= 2,
        SASL_LOG_FAIL | SASL_LOG_WARN => verbose >= 1,
        _ => true,
    };
    if shown && !message.is_null() {
        // SAFETY: Cyrus passes a NUL-terminated message valid for the call.
        let text = unsafe { CStr::from_ptr(message) };
        say(format_args!("SASL (severity {level}): {}", text.to_string_lossy()));
    }
    SASL_OK
}

/// The outcome of one start or step, as memcached sorts Cyrus's codes.
#[derive(Debug, PartialEq, Eq)]
pub enum Exchange<'a> {
    /// `SASL_OK`: authenticated.
    Done,
    /// `SASL_CONTINUE` with the server's challenge.
    Continue(&'a [u8]),
    /// Anything else (the Cyrus code, for `-v`).
    Failed(c_int),
}

/// One connection's SASL context (`sasl_conn_t`), disposed when dropped.
pub struct Conn {
    lib: &'static Cyrus,
    raw: *mut RawConn,
}

// SAFETY: a `Conn` belongs to one session, which one worker thread owns
// and uses one call at a time (`&mut self`); every library call is made
// under `CALLS`, so no two threads are ever inside Cyrus at once.
unsafe impl Send for Conn {}

impl Conn {
    /// `sasl_server_new` for a new connection, as memcached calls it. A
    /// failure leaves no context; memcached then goes on with a NULL one,
    /// which every later call refuses (see [`Conn::listmech`]).
    pub fn new(lib: &'static Cyrus) -> Conn {
        let mut raw: *mut RawConn = std::ptr::null_mut();
        let realm = lib.hostname.as_ref().map_or(std::ptr::null(), |h| h.as_ptr());
        let _calls = lock();
        // SAFETY: the service name and realm are NUL-terminated and outlive
        // the call (the library copies them); `raw` is a valid out-pointer;
        // the other pointers may be NULL per sasl.h.
        let rc = unsafe {
            (lib.server_new)(
                c"memcached".as_ptr(),
                std::ptr::null(),
                realm,
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                0,
                &mut raw,
            )
        };
        if rc != SASL_OK {
            if VERBOSE.load(Ordering::Relaxed) > 0 {
                eprintln!("Failed to initialize SASL conn.");
            }
            raw = std::ptr::null_mut();
        }
        Conn { lib, raw }
    }

    /// The mechanisms, space-separated (memcached's prefix, separator and
    /// suffix); `None` when Cyrus fails.
    pub fn listmech(&mut self) -> Option<&[u8]> {
        if self.raw.is_null() {
            return None;
        }
        let mut out: *const c_char = std::ptr::null();
        let mut len: c_uint = 0;
        let _calls = lock();
        // SAFETY: `raw` is a live context owned by this Conn; the strings
        // are NUL-terminated statics; `out`/`len` are valid out-pointers and
        // the count pointer may be NULL.
        let rc = unsafe {
            (self.lib.listmech)(self.raw, std::ptr::null(), c"".as_ptr(), c" ".as_ptr(), c"".as_ptr(), &mut out, &mut len, std::ptr::null_mut())
        };
        if rc != SASL_OK || out.is_null() {
            return None;
        }
        // SAFETY: Cyrus returns `len` bytes at `out`, owned by the context
        // and valid until the next call on it, which needs `&mut self`.
        Some(unsafe { std::slice::from_raw_parts(out.cast::<u8>(), len as usize) })
    }

    /// `sasl_server_start` with `mech` (at most 32 bytes, not NUL-terminated)
    /// and the client's first message.
    pub fn start(&mut self, mech: &[u8], data: &[u8]) -> Exchange<'_> {
        // The parser bounds the mechanism name (memcached's
        // MAX_SASL_MECH_LEN); copied to add the NUL Cyrus needs.
        // memcached copies the name into a C string, so a NUL ends it.
        let mech = mech.split(|&b| b == 0).next().unwrap_or_default();
        let mut name = [0u8; larder_proto::binary::MAX_SASL_MECH_LEN + 1];
        if mech.len() >= name.len() {
            return Exchange::Failed(SASL_BADPARAM);
        }
        name[..mech.len()].copy_from_slice(mech);
        if self.raw.is_null() {
            return Exchange::Failed(SASL_BADPARAM);
        }
        let (mut out, mut out_len): (*const c_char, c_uint) = (std::ptr::null(), 0);
        let (input, input_len) = client_in(data);
        let _calls = lock();
        // SAFETY: live context; `name` is NUL-terminated; `input` is NULL
        // or `input_len` readable bytes (memcached passes NULL for no data);
        // out-pointers are valid.
        let rc = unsafe { (self.lib.start)(self.raw, name.as_ptr().cast(), input, input_len, &mut out, &mut out_len) };
        // SAFETY: `out`/`out_len` as the library set them (see `exchange`).
        unsafe { exchange(rc, out, out_len) }
    }

    /// `sasl_server_step` with the client's next message.
    pub fn step(&mut self, data: &[u8]) -> Exchange<'_> {
        if self.raw.is_null() {
            return Exchange::Failed(SASL_BADPARAM);
        }
        let (mut out, mut out_len): (*const c_char, c_uint) = (std::ptr::null(), 0);
        let (input, input_len) = client_in(data);
        let _calls = lock();
        // SAFETY: as in `start`.
        let rc = unsafe { (self.lib.step)(self.raw, input, input_len, &mut out, &mut out_len) };
        // SAFETY: as in `start`.
        unsafe { exchange(rc, out, out_len) }
    }
}

/// The client data as Cyrus takes it: NULL when empty, as memcached passes.
/// Data never exceeds the parser's bound (512 KiB), so the length fits.
fn client_in(data: &[u8]) -> (*const c_char, c_uint) {
    if data.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (data.as_ptr().cast(), data.len() as c_uint)
    }
}

/// Sort a start/step result.
///
/// # Safety
/// `out` must be NULL or point to `out_len` bytes that stay valid while the
/// returned borrow lives (Cyrus keeps them in the connection context until
/// the next call on it).
unsafe fn exchange<'a>(rc: c_int, out: *const c_char, out_len: c_uint) -> Exchange<'a> {
    match rc {
        SASL_OK => Exchange::Done,
        SASL_CONTINUE if out.is_null() => Exchange::Continue(&[]),
        // SAFETY: guaranteed by the caller.
        SASL_CONTINUE => Exchange::Continue(unsafe { std::slice::from_raw_parts(out.cast::<u8>(), out_len as usize) }),
        other => Exchange::Failed(other),
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let _calls = lock();
        // SAFETY: `raw` is a live context created by sasl_server_new and
        // owned only by this Conn; sasl_dispose frees it and NULLs our copy.
        unsafe { (self.lib.dispose)(&mut self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine without libsasl2: a start-up error that says what to
    /// install (the same path as a missing libsasl2.so.2).
    #[test]
    fn missing_library_is_a_clear_error() {
        let e = load("libsasl2-larder-test-missing.so.2", 0).err().expect("no such library");
        assert!(e.starts_with("larder: -S needs Cyrus SASL's libsasl2-larder-test-missing.so.2"), "{e}");
        assert!(e.contains("apt-get install libsasl2-2 libsasl2-modules"), "{e}");
    }

    #[test]
    fn conf_path_as_memcached_finds_it() {
        assert_eq!(conf_path(Some("/x".into()), |_| true).as_deref(), Some("/x"));
        assert_eq!(conf_path(None, |_| false), None);
        // A file: its directory; a directory holding memcached.conf: itself.
        assert_eq!(conf_path(None, |p| p == "/etc/sasl2/memcached.conf").as_deref(), Some("/etc/sasl2"));
        assert_eq!(
            conf_path(None, |p| p.starts_with("/etc/sasl/memcached.conf")).as_deref(),
            Some("/etc/sasl/memcached.conf")
        );
    }
}
