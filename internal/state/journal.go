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
	st := New(now)
	segs, err := store.Segments()
	if err != nil {
		return st, ledger.Tail{}, err
	}
	from, err := replayStart(store, segs)
	if err != nil {
		return st, ledger.Tail{}, err
	}
	tail, err := ledger.Scan(store.Root(), segs[from:], ledger.ScanOptions{VerifyLast: 1}, func(e *ledger.Event) error {
		st.Apply(e)
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

// Journal records events: it appends them to the ledger (and approval
// decisions to the approval log too) and applies them to the state, so
// every later decision of the run sees them. A dry journal only applies.
type Journal struct {
	store     *ledger.Store
	approvals *ledger.Store
	st        *State
	tail      ledger.Tail
	apTail    *ledger.Tail // read on first use
	dry       bool
	clock     func() time.Time
	recorded  []*ledger.Event
	files     []string
}

// NewJournal continues the ledger from tail. clock stamps events that have
// no ts of their own.
func NewJournal(store *ledger.Store, st *State, tail ledger.Tail, clock func() time.Time, dry bool) *Journal {
	return &Journal{store: store, approvals: ledger.OpenApprovalLog(store.Root()), st: st, tail: tail, dry: dry, clock: clock}
}

// State is the state as of the last recorded event.
func (j *Journal) State() *State { return j.st }

// Tail is where the ledger ends now.
func (j *Journal) Tail() ledger.Tail { return j.tail }

// Recorded lists what this journal appended, in order (seq and prev as
// written; a rebase assigns new ones).
func (j *Journal) Recorded() []*ledger.Event { return j.recorded }

// Files are the ledger files this journal wrote to (slash paths relative
// to the repository root), for the commit.
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

// Record stamps, appends and applies events, as one gzip member. When the
// month has changed since the last event, a checkpoint of the state opens
// the new month file first.
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
		seg, newMonth := j.store.Target(j.tail, evs[0].TS)
		batch := evs
		if newMonth && !j.tail.Empty() {
			batch = append([]*ledger.Event{j.st.Checkpoint(evs[0].TS)}, evs...)
		}
		tail, err := j.store.Append(j.tail, seg, batch)
		if err != nil {
			return err
		}
		j.tail = tail
		j.files = append(j.files, seg.Path)
		if err := j.logApprovals(evs); err != nil {
			return err
		}
	}
	for _, e := range evs {
		j.st.Apply(e)
	}
	j.recorded = append(j.recorded, evs...)
	return nil
}

// logApprovals copies approval decisions to var/approvals/approved.ndjson.gz
// (seed 000's approval audit trail).
func (j *Journal) logApprovals(evs []*ledger.Event) error {
	var ap []*ledger.Event
	for _, e := range evs {
		switch e.Event {
		case ledger.ApprovalApproved, ledger.ApprovalConsumed, ledger.ApprovalRejected, ledger.ApprovalExpired, ledger.ApprovalRefused:
			c := *e
			ap = append(ap, &c)
		}
	}
	if len(ap) == 0 {
		return nil
	}
	if j.apTail == nil {
		segs, err := j.approvals.Segments()
		if err != nil {
			return err
		}
		t, err := ledger.Scan(j.approvals.Root(), segs, ledger.ScanOptions{Verify: true}, func(*ledger.Event) error { return nil })
		if err != nil {
			return err
		}
		j.apTail = &t
	}
	seg, _ := j.approvals.Target(*j.apTail, ap[0].TS)
	t, err := j.approvals.Append(*j.apTail, seg, ap)
	if err != nil {
		return err
	}
	j.apTail = &t
	j.files = append(j.files, seg.Path)
	return nil
}
