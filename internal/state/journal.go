package state

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// ReplayEach replays the ledger into the state at now, handing each event,
// once applied, to fn (when not nil), for readers that need more than the
// state, such as the dashboard: one pass over the month instead of two. fn
// must not keep e. It reads from the newest month that opens with a
// checkpoint (normally just the current month), so its cost is bounded by
// a month, not the whole history; Replay starts from the snapshot instead
// when it can. The hash chain of the last file (the one the next append
// continues) is verified; `astra ledger verify` checks all of them.
//
// On a *ledger.CorruptError the state holds every event before the bad
// line, and the error says where it is. A ledger whose start is not in the
// checkout (a sparse checkout) is an error wrapping ErrIncomplete.
//
// A sealed store (ledger.Store.Sealed) has the chain of every file read
// verified and applies only the events a valid seal covers: what follows
// the last one is a *ledger.UnsealedError, the state and tail being those
// of the sealed part (see Replay). fn may then have seen events after it
// (the error's Applied).
func ReplayEach(store *ledger.Store, now time.Time, fn func(e *ledger.Event)) (*State, ledger.Tail, error) {
	st := New(now)
	segs, err := store.Segments()
	if err != nil {
		return st, ledger.Tail{}, err
	}
	tail, err := replay(st, store, segs, 0, fn)
	return st, tail, err
}

// replay applies segs to st from the newest month that opens with a
// checkpoint, up to and including seq until (0: to the end). When a
// sealed scan applied events its newest seal turned out not to cover, the
// state is built again up to the sealed part (unless fn saw them too).
func replay(st *State, store *ledger.Store, segs []ledger.Segment, until int64, fn func(e *ledger.Event)) (ledger.Tail, error) {
	root := store.Root()
	from, err := replayStart(root, segs)
	if err != nil || len(segs) == 0 {
		return ledger.Tail{}, err
	}
	if first, err := ledger.First(root, segs[from]); err == nil && first != nil && first.Seq != 1 && first.Event != ledger.LedgerCheckpoint {
		return ledger.Tail{}, fmt.Errorf("%w: %s starts at seq %d, and the files before it are not here", ErrIncomplete, segs[from].Path, first.Seq)
	}
	opts := ledger.ScanOptions{VerifyLast: 1, SkipOutput: true, Until: until, Seals: store.Seals()}
	if opts.Seals != nil {
		opts.Verify = true // a seal covers the lines before it through the chain
	}
	apply := func(e *ledger.Event) error {
		st.Apply(e)
		if fn != nil {
			fn(e)
		}
		return nil
	}
	tail, err := ledger.Scan(root, segs[from:], opts, apply)
	var u *ledger.UnsealedError
	if !errors.As(err, &u) || !u.Applied || fn != nil {
		return tail, err
	}
	*st = *New(st.Now)
	if u.Sealed.Seq > 0 {
		opts.Until = u.Sealed.Seq
		if _, err := ledger.Scan(root, segs[from:], opts, apply); err != nil {
			return u.Sealed, err
		}
	}
	u.Applied = false
	return u.Sealed, u
}

// ErrIncomplete: the ledger's start is not in this checkout (a sparse
// checkout holds only the files a run appends to), so it cannot be
// replayed; runs start from the state snapshot instead.
var ErrIncomplete = errors.New("the ledger is not all in this checkout")

// replayStart is the index of the first segment of the newest month that
// begins with a checkpoint, or 0.
func replayStart(root string, segs []ledger.Segment) (int, error) {
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i].Index != 0 || segs[i].Month == "" {
			continue
		}
		e, err := ledger.First(root, segs[i])
		if err != nil {
			return 0, err
		}
		if e != nil && e.Event == ledger.LedgerCheckpoint {
			return i, nil
		}
	}
	return 0, nil
}

// MemoryDir holds agent memory: results of memory_update
// runs with their provenance, one month per file like the ledger.
const MemoryDir = "var/memory"

// side is a log next to the ledger that some events go to: the approval
// log gets copies of approval decisions (the audit trail), the
// memory log gets stored results (only there) and purges (copies).
type side struct {
	store *ledger.Store
	tail  *ledger.Tail // read on first use
	copy  func(k ledger.Kind) bool
	only  func(k ledger.Kind) bool // kept out of the main ledger
	held  []*ledger.Event          // its copies of what a Batch holds
}

// Journal records events: it appends them to the ledger (and to the side
// logs) and applies them to the state, so every later decision of the run
// sees them. A dry journal only applies.
type Journal struct {
	store    *ledger.Store
	sides    []*side
	st       *State
	tail     ledger.Tail
	dry      bool
	clock    func() time.Time
	mark     string // the clock field of every event recorded (MarkClock)
	recorded []*ledger.Event
	files    []string
	saved    ledger.Tail // the head of the snapshot on disk, when it is the state's
	// The snapshot's pair (see SaveSnapshot): pending until a commit holds
	// it, committed from then on.
	pairPending, pairCommitted bool

	// While Batch runs, ledger lines are chained, applied and held here
	// instead of written: one gzip member and one fsync for the batch.
	holding bool
	held    []byte
	heldSeg ledger.Segment
	broken  error // a failed Flush: the state holds events the file may not, so nothing more is recorded

	observe func(path string, size int64, data []byte, whole bool, cut int64) // see Observe
}

// NewJournal continues the ledger from tail. clock stamps events that have
// no ts of their own.
func NewJournal(store *ledger.Store, st *State, tail ledger.Tail, clock func() time.Time, dry bool) *Journal {
	approvals := func(k ledger.Kind) bool {
		switch k {
		case ledger.ApprovalRequested, ledger.ApprovalApproved, ledger.ApprovalConsumed, ledger.ApprovalRejected, ledger.ApprovalExpired,
			ledger.ApprovalRefused, ledger.ApprovalIgnored:
			return true
		}
		return false
	}
	stored := func(k ledger.Kind) bool { return k == ledger.MemoryStored }
	var saved ledger.Tail
	if st.snapHead != 0 && st.snapHead == tail.Seq {
		saved = tail // loaded from an up-to-date snapshot: nothing to write until something is recorded
	}
	return &Journal{store: store, st: st, tail: tail, dry: dry, clock: clock, saved: saved, sides: []*side{
		{store: ledger.OpenApprovalLog(store.Root()).Sealed(store.Seals()), copy: approvals, only: func(ledger.Kind) bool { return false }},
		{store: ledger.OpenDir(store.Root(), MemoryDir, 0).Sealed(store.Seals()), copy: func(k ledger.Kind) bool { return k == ledger.MemoryPurged || stored(k) }, only: stored},
	}}
}

// Observe has fn told of every write to the logs and the snapshot's
// files: the file, its size after the write, and the bytes written, all of
// the file (whole) or appended to it; cut is how many bytes of someone
// else's an append cut (see ledger.Store.Observe).
func (j *Journal) Observe(fn func(path string, size int64, data []byte, whole bool, cut int64)) {
	appended := func(path string, size int64, member []byte, cut int64) { fn(path, size, member, false, cut) }
	j.store.Observe(appended)
	for _, sd := range j.sides {
		sd.store.Observe(appended)
	}
	j.observe = fn
}

// MarkClock has every event this journal dates (and the month checkpoints
// they open) say which clock dated it: ledger.ClockTest for a test clock.
func (j *Journal) MarkClock(mark string) { j.mark = mark }

// State is the state as of the last recorded event.
func (j *Journal) State() *State { return j.st }

// Anchors are the heads of the logs this journal appended to (the ledger
// and any side log), for the commit that records them: they let `ledger
// verify` see an edit of a last line, which no hash chain can.
func (j *Journal) Anchors() []ledger.Anchor {
	var out []ledger.Anchor
	if !j.tail.Empty() {
		out = append(out, j.tail.Anchor())
	}
	for _, sd := range j.sides {
		if sd.tail != nil && !sd.tail.Empty() {
			out = append(out, sd.tail.Anchor())
		}
	}
	return out
}

// Recorded lists what this journal recorded, in order (seq and prev as
// written; a rebase assigns new ones).
func (j *Journal) Recorded() []*ledger.Event { return j.recorded }

// Files are the files this journal wrote to (slash paths relative to the
// repository root), for the commit.
func (j *Journal) Files() []string {
	seen := map[string]bool{}
	var out []string
	files := j.files
	if j.pairPending {
		files = append(slices.Clip(files), DeadLettersPath)
	}
	for _, p := range files {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Committed says that a commit now holds Files: the snapshot's pair need
// not be looked at again unless it changes.
func (j *Journal) Committed() {
	if j.pairPending {
		j.pairPending, j.pairCommitted = false, true
	}
}

// Record stamps, appends and applies events, as one gzip member per file.
// When the month has changed since the last event, a checkpoint of the
// state opens the new month file first (and the state starts over from it,
// as a replay of the new month would).
//
// The state sees each event as the ledger has it (decoded from the line
// written, times in whole seconds), so it is the state a replay of the
// ledger would rebuild, which a snapshot of it must be. Events that go to
// agent memory only are not the ledger's and leave the state alone.
func (j *Journal) Record(evs ...*ledger.Event) error {
	if j.broken != nil {
		return j.broken
	}
	if len(evs) == 0 {
		return nil
	}
	now := j.clock().UTC().Truncate(time.Second)
	var main []*ledger.Event
	for _, e := range evs {
		if e.TS.IsZero() {
			e.TS, e.Clock = now, j.mark // an event recorded again keeps the clock that dated it
		}
		if !j.sides[1].only(e.Event) {
			main = append(main, e)
		}
	}
	apply := main
	if !j.dry {
		var err error
		if apply, err = j.appendMain(main); err != nil {
			return err
		}
		for _, sd := range j.sides {
			if err := j.appendSide(sd, evs); err != nil {
				return err
			}
		}
	}
	for _, e := range apply {
		j.st.Apply(asWritten(e))
	}
	j.recorded = append(j.recorded, evs...)
	return nil
}

// appendMain appends the ledger's events, after a checkpoint when they
// open a new month, and returns what was appended.
func (j *Journal) appendMain(main []*ledger.Event) ([]*ledger.Event, error) {
	if len(main) == 0 {
		return main, nil
	}
	seg, newMonth := j.store.Target(j.tail, main[0].TS)
	// Held lines count, uncompressed (more than they will take),
	// towards the segment's size: a batch rolls over like appends.
	if len(j.held) > 0 && (seg.Path != j.heldSeg.Path || int64(len(j.held)) >= j.store.Room(seg)) {
		if err := j.Flush(); err != nil {
			return nil, err
		}
		seg, newMonth = j.store.Target(j.tail, main[0].TS)
	}
	apply := main
	if newMonth && !j.tail.Empty() {
		cp := j.st.Checkpoint(main[0].TS)
		for _, e := range cp {
			e.Clock = main[0].Clock // dated as the event that opens the month
		}
		apply = append(cp, main...)
	}
	if err := j.append(seg, apply); err != nil {
		return nil, err
	}
	j.files = append(j.files, seg.Path)
	return apply, nil
}

// append writes events to seg, or holds their lines while Batch runs.
func (j *Journal) append(seg ledger.Segment, evs []*ledger.Event) error {
	if !j.holding {
		tail, err := j.store.Append(j.tail, seg, evs)
		if err != nil {
			return err
		}
		j.tail = tail
		return nil
	}
	lines, tail, err := ledger.Lines(j.held, j.tail, evs)
	if err != nil {
		return err
	}
	j.held, j.heldSeg = lines, seg
	tail.Segment = seg
	j.tail = tail
	return nil
}

// Batch runs fn with the ledger's appends held back, then writes them as
// one gzip member, synced once, whatever fn returns: a run deciding a
// backlog of hundreds of slots pays one write, not one per decision.
// Held events are chained and applied as they are recorded, so fn sees
// them; what a kill loses is only what no one outside the process has
// seen. fn must Flush before anything outside the process acts on a held
// event (a pull request that names it, a push, a tool).
func (j *Journal) Batch(fn func() error) (err error) {
	if j.holding {
		return fn()
	}
	j.holding = true
	defer func() {
		j.holding = false
		if ferr := j.Flush(); err == nil {
			err = ferr
		}
	}()
	return fn()
}

// Flush writes what Batch holds: the ledger's lines, then the side logs'
// copies.
func (j *Journal) Flush() error {
	if j.broken != nil {
		return j.broken
	}
	if len(j.held) > 0 {
		seg, seal, err := j.store.AppendLines(j.heldSeg, j.held)
		if err != nil {
			j.broken = fmt.Errorf("writing the run's decisions to %s: %w", j.heldSeg.Path, err)
			return j.broken
		}
		j.held = j.held[:0]
		j.tail.Segment, j.tail.Seal = seg, string(seal)
	}
	for _, sd := range j.sides {
		if len(sd.held) == 0 {
			continue
		}
		out := sd.held
		sd.held = nil
		if err := j.writeSide(sd, out); err != nil {
			j.broken = fmt.Errorf("writing the run's decisions to %s: %w", sd.store.Dir(), err)
			return j.broken
		}
	}
	return nil
}

// asWritten is e as the ledger reads it back.
func asWritten(e *ledger.Event) *ledger.Event {
	var c ledger.Event
	if ledger.Unmarshal(ledger.AppendJSON(nil, e), &c) != nil {
		return e // cannot happen: the encoder writes what the decoder reads
	}
	return &c
}

// appendSide writes the events a side log takes: the log's own copies, so
// its seq and chain are its own.
func (j *Journal) appendSide(sd *side, evs []*ledger.Event) error {
	var out []*ledger.Event
	for _, e := range evs {
		if sd.copy(e.Event) {
			c := *e
			out = append(out, &c)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if j.holding {
		// After the ledger's own lines, never before: a side log must not
		// hold what a kill takes from the ledger.
		sd.held = append(sd.held, out...)
		return nil
	}
	return j.writeSide(sd, out)
}

// writeSide appends out to a side log.
func (j *Journal) writeSide(sd *side, out []*ledger.Event) error {
	if sd.tail == nil {
		segs, err := sd.store.Segments()
		if err != nil {
			return err
		}
		if len(segs) > 0 {
			segs = segs[len(segs)-1:] // the tail is all an append needs
		}
		t, err := ledger.Scan(sd.store.Root(), segs, ledger.ScanOptions{Verify: true, Seals: sd.store.Seals()}, func(*ledger.Event) error { return nil })
		if err != nil {
			return err
		}
		sd.tail = &t
	}
	seg, _ := sd.store.Target(*sd.tail, out[0].TS)
	t, err := sd.store.Append(*sd.tail, seg, out)
	if err != nil {
		return err
	}
	sd.tail = &t
	j.files = append(j.files, seg.Path)
	return nil
}
