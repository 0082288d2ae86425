//! The feed's log: the lines (events with their shared encodings) a core's feed of one
//! prefix holds, bounded by `WATCH_FEED_EVENTS_MAX` lines and `WATCH_FEED_BYTES_MAX` bytes, and
//! the state its task and subscribers share (`FeedState`, behind `Feed`).

use super::subscription::Slot;
use crate::limits::{
    WATCH_FEED_BYTES_MAX, WATCH_FEED_EVENTS_MAX,
    WATCH_FEED_PARSED_BYTES_PER_BYTE as PARSED_BYTES_PER_BYTE, WATCH_FEED_PHASES,
    WATCH_FEED_RETAIN_EVENTS,
};
use crate::repr::Format;
use crate::selection::{as_happened, event_object, event_type, Indexed, Selection};
use keel_engine::{Event, EventKind, Revision, WatchError};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::task::Waker;

/// One event of the log.
pub(super) struct Line {
    pub(super) rev: Revision,
    pub(super) ev: Arc<Event>,
    /// Its JSON watch line as it happened (what JSON watches without selection send).
    pub(super) bytes: Arc<[u8]>,
    /// Parsed objects and other encodings, made by the first subscriber that needs them.
    pub(super) more: Option<Box<More>>,
}

#[derive(Default)]
pub(super) struct More {
    /// The new object (puts) and the previous one, parsed; `None` if absent or unparsable.
    pub(super) parsed: Option<(Option<Value>, Option<Value>)>,
    /// Encodings by representation, event type and the version objects are converted to.
    pub(super) encoded: Vec<Encoded>,
    /// Bytes charged for the above.
    pub(super) charged: usize,
}

/// One encoding of a line: representation, event type, the version its object was converted
/// to (`None`: as stored) and the bytes.
pub(super) type Encoded = (Format, &'static str, Option<Arc<str>>, Arc<[u8]>);

impl Line {
    /// Bytes it holds: its line, the stored objects of its event, and what was made later.
    pub(super) fn charged(&self) -> usize {
        let stored =
            self.ev.kv.value().len() + self.ev.prev.as_ref().map_or(0, |p| p.value().len());
        self.bytes.len() + stored + self.more.as_ref().map_or(0, |m| m.charged)
    }

    /// The revision its event's object (as it happened: the deleted one for a delete) was
    /// last written at.
    pub(super) fn written(&self) -> Revision {
        match (self.ev.kind, &self.ev.prev) {
            (EventKind::Delete, Some(p)) => p.mod_revision,
            _ => self.ev.kv.mod_revision,
        }
    }

    /// The new object (puts) and the previous one, parsed on first use; `charged` grows by
    /// what parsing them costs.
    pub(super) fn parsed(&mut self, charged: &mut usize) -> (Option<&Value>, Option<&Value>) {
        let ev = &self.ev;
        let more = self.more.get_or_insert_with(Box::default);
        let (new, old) = more.parsed.get_or_insert_with(|| {
            let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).ok();
            let new = (ev.kind == EventKind::Put)
                .then(|| parse(ev.kv.value()))
                .flatten();
            let old = ev.prev.as_ref().and_then(|p| parse(p.value()));
            let stored = ev.kv.value().len() + ev.prev.as_ref().map_or(0, |p| p.value().len());
            more.charged += stored * PARSED_BYTES_PER_BYTE;
            *charged += stored * PARSED_BYTES_PER_BYTE;
            (new, old)
        });
        (new.as_ref(), old.as_ref())
    }

    /// What `sel` sends for this event, if anything: the event's type and its shared bytes.
    /// `charged` grows by what had to be parsed or encoded.
    pub(super) fn select(&mut self, sel: &Selection, charged: &mut usize) -> Option<Arc<[u8]>> {
        let kind = if sel.selects_all() {
            as_happened(&self.ev)?
        } else {
            let (new, old) = self.parsed(charged);
            let new_ok = new.is_some_and(|v| sel.matches(v));
            let old_ok = old.is_some_and(|v| sel.matches(v));
            event_type(self.ev.kind, old_ok, new_ok)?
        };
        let ev = &self.ev;
        let enc = sel.encoder();
        let format = enc.format();
        // The version the object goes out in, if converted (read from the stored bytes: a
        // route in the storage version sends the feed's line, nothing made).
        let (stored, written) = match (kind, &ev.prev) {
            ("DELETED", Some(p)) => (p.value(), p.mod_revision),
            _ => (ev.kv.value(), ev.kv.mod_revision),
        };
        // An object that may predate its custom resource's schema goes out pruned and
        // defaulted, made for this watch alone (only old objects' deletes and replays).
        if enc.decodes(written) {
            let mut out = Vec::new();
            enc.event_at(&mut out, kind, &event_object(ev, kind), written);
            *charged += out.len();
            return (!out.is_empty()).then(|| out.into());
        }
        let to = enc.converts_to().filter(|_| enc.converts(stored));
        if format == Format::Json && Some(kind) == as_happened(ev) && to.is_none() {
            return Some(self.bytes.clone());
        }
        let more = self.more.get_or_insert_with(Box::default);
        let object = event_object(ev, kind);
        if let Some((.., b)) = more
            .encoded
            .iter()
            .find(|(f, k, v, _)| *f == format && *k == kind && v.as_deref() == to.map(|t| &**t))
        {
            return Some(b.clone());
        }
        let mut out = Vec::new();
        enc.event(&mut out, kind, &object);
        let bytes: Arc<[u8]> = out.into();
        more.charged += bytes.len();
        *charged += bytes.len();
        more.encoded
            .push((format, kind, to.cloned(), bytes.clone()));
        (!bytes.is_empty()).then_some(bytes)
    }
}

pub(super) struct FeedState {
    pub(super) lines: VecDeque<Line>,
    /// Sequence number of `lines[0]`.
    pub(super) first_seq: u64,
    /// Lines below this sequence number may be read by subscribers.
    pub(super) announced: u64,
    pub(super) bytes: usize,
    /// Every event with a revision above `floor` is in `lines` or not yet pulled.
    pub(super) floor: Revision,
    /// Every event with a revision up to `synced` has been pulled.
    pub(super) synced: Revision,
    /// Set once the feed stops: its store watcher failed or nobody is subscribed.
    pub(super) ended: Option<WatchError>,
    pub(super) slots: Vec<Option<Slot>>,
    pub(super) free: Vec<usize>,
    pub(super) subscribers: usize,
    pub(super) task: Option<Waker>,
    /// Paced subscribers (slot indices) by phase; entries of slots since left or reused are
    /// skipped when their phase comes.
    pub(super) paced: Vec<Vec<usize>>,
    /// The task's phase timer is armed.
    pub(super) ticking: bool,
    /// Slots that asked to be woken by the next announcement (entries of slots since left,
    /// reused or paced are skipped; indexed ones stay until a line is for them).
    pub(super) waiting: Vec<usize>,
    /// Indexed subscribers (slots) by the field and the value their selection requires.
    pub(super) index: HashMap<Indexed, HashMap<String, Vec<usize>>>,
    /// Scratch list of the slots a pulled line concerns.
    pub(super) marks: Vec<usize>,
}

impl FeedState {
    /// An empty feed holding every event after revision `after` (none yet).
    pub(super) fn new(after: Revision) -> FeedState {
        FeedState {
            lines: VecDeque::new(),
            first_seq: 0,
            announced: 0,
            bytes: 0,
            floor: after,
            synced: after,
            ended: None,
            slots: Vec::new(),
            free: Vec::new(),
            subscribers: 0,
            task: None,
            paced: vec![Vec::new(); WATCH_FEED_PHASES],
            ticking: false,
            waiting: Vec::new(),
            index: HashMap::new(),
            marks: Vec::new(),
        }
    }

    pub(super) fn head_seq(&self) -> u64 {
        self.first_seq + self.lines.len() as u64
    }

    pub(super) fn push(&mut self, line: Line) {
        self.bytes += line.charged();
        self.lines.push_back(line);
        while self.lines.len() > WATCH_FEED_EVENTS_MAX || self.bytes > WATCH_FEED_BYTES_MAX {
            self.drop_first();
        }
    }

    /// Appends a pulled line, first marking it for the indexed subscribers whose field has
    /// their value in its new or previous object (the only ones it may concern).
    pub(super) fn push_marked(&mut self, mut line: Line) {
        if self.index.is_empty() {
            return self.push(line);
        }
        let mut marks = std::mem::take(&mut self.marks);
        // A name is the key's last segment (the same before and after the change): the
        // `kube-root-ca.crt` watch of every namespace's ConfigMaps, or a single-name watch,
        // is marked without parsing the objects, which cost a ConfigMap create as much again
        // as its decoding (callgrind, 2026-12-03). Other fields parse them, once.
        let ev = line.ev.clone();
        let key = ev.kv.key();
        let name = std::str::from_utf8(key.rsplit(|&b| b == b'/').next().unwrap_or(key)).ok();
        for (field, by_value) in &self.index {
            if field.is_name() {
                marks.extend(name.and_then(|n| by_value.get(n)).into_iter().flatten());
                continue;
            }
            // Charged through `push`, which counts the line's parsed objects too.
            let (new, old) = line.parsed(&mut 0);
            for obj in [new, old].into_iter().flatten() {
                let found = field.value_of(obj).and_then(|v| by_value.get(v.as_ref()));
                marks.extend(found.into_iter().flatten());
            }
        }
        self.push(line);
        let seq = self.head_seq() - 1;
        for &i in &marks {
            if let Some(slot) = self.slots[i].as_mut() {
                slot.relevant = Some((slot.relevant.map_or(seq, |(first, _)| first), seq));
            }
        }
        marks.clear();
        self.marks = marks;
    }

    pub(super) fn drop_first(&mut self) {
        if let Some(old) = self.lines.pop_front() {
            self.bytes -= old.charged();
            self.floor = old.rev;
            self.first_seq += 1;
            self.announced = self.announced.max(self.first_seq);
        }
    }

    /// Drops lines every subscriber has passed, keeping the newest `WATCH_FEED_RETAIN_EVENTS`.
    pub(super) fn trim(&mut self) {
        let head = self.head_seq();
        let slowest = self.slots.iter().flatten().map(|s| s.cursor(head)).min();
        let keep_from = self
            .head_seq()
            .saturating_sub(WATCH_FEED_RETAIN_EVENTS as u64);
        let upto = slowest.unwrap_or(u64::MAX).min(keep_from);
        while self.first_seq < upto && !self.lines.is_empty() {
            self.drop_first();
        }
    }
}

/// The shared part of one prefix's fan-out on one core.
pub struct Feed {
    pub(super) state: RefCell<FeedState>,
}

impl Feed {
    /// Ends the feed: every subscriber, waiting or paced, is woken to read its rest and `e`.
    pub(super) fn end(&self, e: WatchError) {
        let mut st = self.state.borrow_mut();
        st.ended = Some(e);
        st.task = None;
        st.announced = st.head_seq();
        for slot in st.slots.iter_mut().flatten() {
            slot.paced = false;
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        }
    }
}
