//! An arena of doubly linked lists of keys, for the LRU-family policies.
//!
//! Several lists share one node arena so a node moves between lists (window
//! → probation → protected, hot → warm → cold) without reallocating; a
//! handle (`u32` node index) stays valid until the node is removed. Each node
//! carries a `meta` byte the policy uses as it likes (a frequency counter,
//! memcached's FETCHED/ACTIVE bits). "Front" is the most recently inserted
//! (MRU) end, "back" the eviction (LRU/FIFO) end.

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: u32,
    prev: u32,
    next: u32,
    list: u8,
    meta: u8,
}

pub struct Lists {
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
    len: Vec<usize>,
}

impl Lists {
    pub fn new(nlists: usize) -> Lists {
        Lists { nodes: Vec::new(), free: Vec::new(), head: vec![NIL; nlists], tail: vec![NIL; nlists], len: vec![0; nlists] }
    }

    pub fn len(&self, list: usize) -> usize {
        self.len[list]
    }

    pub fn key(&self, h: u32) -> u32 {
        self.nodes[h as usize].key
    }

    pub fn list_of(&self, h: u32) -> usize {
        self.nodes[h as usize].list as usize
    }

    pub fn meta(&self, h: u32) -> u8 {
        self.nodes[h as usize].meta
    }

    pub fn set_meta(&mut self, h: u32, m: u8) {
        self.nodes[h as usize].meta = m;
    }

    /// The eviction end of `list`.
    pub fn back(&self, list: usize) -> Option<u32> {
        let t = self.tail[list];
        (t != NIL).then_some(t)
    }

    /// Inserts `key` at the front of `list`; its handle.
    pub fn push_front(&mut self, list: usize, key: u32, meta: u8) -> u32 {
        let node = Node { key, prev: NIL, next: NIL, list: list as u8, meta };
        let h = match self.free.pop() {
            Some(h) => {
                self.nodes[h as usize] = node;
                h
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.link_front(list, h);
        h
    }

    fn link_front(&mut self, list: usize, h: u32) {
        let old = self.head[list];
        {
            let n = &mut self.nodes[h as usize];
            n.prev = NIL;
            n.next = old;
            n.list = list as u8;
        }
        if old != NIL {
            self.nodes[old as usize].prev = h;
        } else {
            self.tail[list] = h;
        }
        self.head[list] = h;
        self.len[list] += 1;
    }

    fn unlink(&mut self, h: u32) {
        let Node { prev, next, list, .. } = self.nodes[h as usize];
        let list = list as usize;
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            self.head[list] = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            self.tail[list] = prev;
        }
        self.len[list] -= 1;
    }

    /// Moves a node to the front of `list` (its own or another).
    pub fn move_to_front(&mut self, h: u32, list: usize) {
        self.unlink(h);
        self.link_front(list, h);
    }

    /// Removes a node; its key.
    pub fn remove(&mut self, h: u32) -> u32 {
        self.unlink(h);
        self.free.push(h);
        self.nodes[h as usize].key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_move_remove() {
        let mut l = Lists::new(2);
        let a = l.push_front(0, 1, 0);
        let b = l.push_front(0, 2, 0);
        let c = l.push_front(0, 3, 0);
        assert_eq!(l.back(0), Some(a));
        l.move_to_front(a, 0);
        assert_eq!(l.back(0), Some(b));
        l.move_to_front(b, 1);
        assert_eq!((l.len(0), l.len(1)), (2, 1));
        assert_eq!(l.list_of(b), 1);
        assert_eq!(l.remove(c), 3);
        assert_eq!(l.back(0), Some(a));
        assert_eq!(l.remove(a), 1);
        assert_eq!(l.back(0), None);
        let d = l.push_front(0, 4, 9);
        assert!(d == a || d == c, "freed node reused");
        assert_eq!((l.key(d), l.meta(d)), (4, 9));
    }
}
