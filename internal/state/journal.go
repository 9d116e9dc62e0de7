package state

import (
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// Replay rebuilds the state at now from the ledger. It reads from the
// newest month that opens with a checkpoint (normally just the current
// month), so its cost is bounded by a month, not the whole history. The
// hash chain of the last file (the one the next append continues) is
// verified; `astra ledger verify` checks all of them.
//
// On a *ledger.CorruptError the state holds every event before the bad
// line, and the error says where it is.
func Replay(store *ledger.Store, now time.Time) (*State, ledger.Tail, error) {
	return ReplayEach(store, now, nil)
}

// ReplayEach is Replay that also hands each event, once applied, to fn
// (when not nil), for readers that need more than the state, such as the
// dashboard: one pass over the month instead of two. fn must not keep e.
func ReplayEach(store *ledger.Store, now time.Time, fn func(e *ledger.Event)) (*State, ledger.Tail, error) {
	st := New(now)
	segs, err := store.Segments()
	if err != nil {
		return st, ledger.Tail{}, err
	}
	from, err := replayStart(store, segs)
	if err != nil {
		return st, ledger.Tail{}, err
	}
	tail, err := ledger.Scan(store.Root(), segs[from:], ledger.ScanOptions{VerifyLast: 1, SkipOutput: true}, func(e *ledger.Event) error {
		st.Apply(e)
		if fn != nil {
			fn(e)
		}
		return nil
	})
	return st, tail, err
}

// replayStart is the index of the first segment of the newest month that
// begins with a checkpoint, or 0.
func replayStart(store *ledger.Store, segs []ledger.Segment) (int, error) {
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i].Index != 0 || segs[i].Month == "" {
			continue
		}
		e, err := ledger.First(store.Root(), segs[i])
		if err != nil {
			return 0, err
		}
		if e != nil && e.Event == ledger.LedgerCheckpoint {
			return i, nil
		}
	}
	return 0, nil
}

// MemoryDir holds agent memory (seed 002): results of memory_update
// runs with their provenance, one month per file like the ledger.
const MemoryDir = "var/memory"

// side is a log next to the ledger that some events go to: the approval
// log gets copies of approval decisions (seed 000's audit trail), the
// memory log gets stored results (only there) and purges (copies).
type side struct {
	store *ledger.Store
	tail  *ledger.Tail // read on first use
	copy  func(k ledger.Kind) bool
	only  func(k ledger.Kind) bool // kept out of the main ledger
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
	recorded []*ledger.Event
	files    []string
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
	return &Journal{store: store, st: st, tail: tail, dry: dry, clock: clock, sides: []*side{
		{store: ledger.OpenApprovalLog(store.Root()), copy: approvals, only: func(ledger.Kind) bool { return false }},
		{store: ledger.OpenDir(store.Root(), MemoryDir, 0), copy: func(k ledger.Kind) bool { return k == ledger.MemoryPurged || stored(k) }, only: stored},
	}}
}

// State is the state as of the last recorded event.
func (j *Journal) State() *State { return j.st }

// Recorded lists what this journal recorded, in order (seq and prev as
// written; a rebase assigns new ones).
func (j *Journal) Recorded() []*ledger.Event { return j.recorded }

// Files are the files this journal wrote to (slash paths relative to the
// repository root), for the commit.
func (j *Journal) Files() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range j.files {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Record stamps, appends and applies events, as one gzip member per file.
// When the month has changed since the last event, a checkpoint of the
// state opens the new month file first.
func (j *Journal) Record(evs ...*ledger.Event) error {
	if len(evs) == 0 {
		return nil
	}
	now := j.clock().UTC().Truncate(time.Second)
	for _, e := range evs {
		if e.TS.IsZero() {
			e.TS = now
		}
	}
	if !j.dry {
		var main []*ledger.Event
		for _, e := range evs {
			if !j.sides[1].only(e.Event) {
				main = append(main, e)
			}
		}
		if len(main) > 0 {
			seg, newMonth := j.store.Target(j.tail, main[0].TS)
			batch := main
			if newMonth && !j.tail.Empty() {
				batch = append([]*ledger.Event{j.st.Checkpoint(main[0].TS)}, main...)
			}
			tail, err := j.store.Append(j.tail, seg, batch)
			if err != nil {
				return err
			}
			j.tail = tail
			j.files = append(j.files, seg.Path)
		}
		for _, sd := range j.sides {
			if err := j.appendSide(sd, evs); err != nil {
				return err
			}
		}
	}
	for _, e := range evs {
		j.st.Apply(e)
	}
	j.recorded = append(j.recorded, evs...)
	return nil
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
	if sd.tail == nil {
		segs, err := sd.store.Segments()
		if err != nil {
			return err
		}
		if len(segs) > 0 {
			segs = segs[len(segs)-1:] // the tail is all an append needs
		}
		t, err := ledger.Scan(sd.store.Root(), segs, ledger.ScanOptions{Verify: true}, func(*ledger.Event) error { return nil })
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
