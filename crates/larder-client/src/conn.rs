//! One blocking TCP connection to a node: writes commands, reads meta replies
//! (header line and value) with every length checked, and remembers which
//! invalidation stream generation it is attached to.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::proto::{self, Header, MetaFlags};
use crate::Error;

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// The stream generation this connection is attached to (`track attach`);
    /// 0: none.
    pub attached_gen: u64,
}

/// One reply: a header and, for `VA`, the value.
#[derive(Debug)]
pub enum Reply {
    Value(Vec<u8>, MetaFlags),
    Other(Header),
}

impl Conn {
    pub fn connect(addr: &SocketAddr, timeout: Duration) -> Result<Conn, Error> {
        let s = TcpStream::connect_timeout(addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        let writer = s.try_clone()?;
        Ok(Conn { reader: BufReader::new(s), writer, attached_gen: 0 })
    }

    /// False when the server has closed this idle connection (a restart, an
    /// idle timeout) or left bytes on it that no request asked for. Checked
    /// before an idle connection is reused, so that a request is never sent
    /// on a connection already known to be dead (pymemcache and libmemcached
    /// likewise reconnect before sending rather than failing the request).
    pub fn is_alive(&self) -> bool {
        if !self.reader.buffer().is_empty() {
            return false;
        }
        let s = self.reader.get_ref();
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let mut b = [0u8; 1];
        let alive = matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        alive && s.set_nonblocking(false).is_ok()
    }

    pub fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.writer.write_all(bytes)?;
        Ok(())
    }

    /// One line without its `\r\n`.
    pub fn line(&mut self) -> Result<Vec<u8>, Error> {
        read_line(&mut self.reader)
    }

    pub fn reply(&mut self) -> Result<Reply, Error> {
        let line = self.line()?;
        match proto::parse_header(&line)? {
            Header::Value(len, flags) => {
                let mut v = vec![0u8; len + 2];
                self.reader.read_exact(&mut v)?;
                if &v[len..] != b"\r\n" {
                    return Err(Error::Protocol("value not followed by \\r\\n".into()));
                }
                v.truncate(len);
                Ok(Reply::Value(v, flags))
            }
            h => Ok(Reply::Other(h)),
        }
    }
}

/// Reads one `\r\n`-terminated line of at most `proto::MAX_LINE` bytes.
pub fn read_line(r: &mut impl BufRead) -> Result<Vec<u8>, Error> {
    let mut line = Vec::with_capacity(64);
    let n = r.take(proto::MAX_LINE as u64 + 2).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(Error::Io(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed")));
    }
    if !line.ends_with(b"\r\n") {
        return Err(Error::Protocol("line too long or not ended by \\r\\n".into()));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}
