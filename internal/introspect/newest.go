package introspect

import (
	"encoding/json"
	"errors"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Each calls fn with the tasks matching q, newest first, until fn returns
// false. Files are read from the newest back and the reading stops when
// fn has had enough, so a bounded query costs what it returns, not the
// month; an unbounded one holds a file's tasks at a time. Tasks are
// ordered by the file their claim is in, newest first, and by start time
// (then run id) within one; a run whose claim is older than what is read
// (before q.Since) comes last, started at its outcome.
func Each(store *ledger.Store, now time.Time, q Query, fn func(t *Task) bool) error {
	since := q.Since
	if since.IsZero() {
		since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	segs, err := store.Segments()
	if err != nil {
		return err
	}
	from := ledger.Month(since)
	segs = segs[sort.Search(len(segs), func(i int) bool { return segs[i].Month >= from }):]

	r := newBackReader(store.Root(), segs, q, since)
	defer r.close()
	pending := map[string]Task{} // outcomes whose claim is in an older file
	rolled := map[string]bool{}  // runs a newer event rolled back
	for range segs {
		f, err := r.next()
		if err != nil {
			return err
		}
		for _, id := range f.rollbacks {
			rolled[id] = true
		}
		batch := f.tasks[:0]
		for _, t := range f.tasks {
			if t.Status == "running" {
				if o, ok := pending[t.RunID]; ok {
					delete(pending, t.RunID)
					t.Ended, t.Usage, t.Error, t.Output, t.Reason, t.Status = o.Ended, o.Usage, o.Error, o.Output, o.Reason, o.Status
				}
			}
			if t.Status == "completed" && rolled[t.RunID] {
				t.Status = "rolled_back"
			}
			if q.wants(t.Status) {
				batch = append(batch, t)
			}
		}
		for id, o := range f.orphans {
			pending[id] = o
		}
		if !emit(batch, fn) {
			return nil
		}
	}
	// Outcomes of runs claimed before what was read.
	var rest []Task
	for _, t := range pending {
		if t.Status == "completed" && rolled[t.RunID] {
			t.Status = "rolled_back"
		}
		if q.wants(t.Status) {
			rest = append(rest, t)
		}
	}
	emit(rest, fn)
	return nil
}

// emit passes ts to fn newest first; false when fn had enough.
func emit(ts []Task, fn func(t *Task) bool) bool {
	sort.Slice(ts, func(i, j int) bool {
		if !ts[i].Started.Equal(ts[j].Started) {
			return ts[i].Started.After(ts[j].Started)
		}
		return ts[i].RunID > ts[j].RunID
	})
	for i := range ts {
		if !fn(&ts[i]) {
			return false
		}
	}
	return true
}

// fileTasks is what one ledger file says about tasks on its own.
type fileTasks struct {
	tasks     []Task          // claimed or skipped in it; running: no outcome in it
	orphans   map[string]Task // outcomes of runs claimed in an older file, by run id
	rollbacks []string        // runs it rolled back
	err       error
}

// fold reads one file's tasks. Tasks that can no longer change and that
// q does not want are dropped as they end, so a selective query holds
// little; claims still open at the end of the file are kept for a newer
// file's outcome.
func fold(root string, seg ledger.Segment, q Query, since time.Time, stop <-chan struct{}) *fileTasks {
	f := &fileTasks{orphans: map[string]Task{}}
	open := map[string]Task{}        // claims without an outcome yet, by run id
	approvals := map[string]string{} // who approved a slot and why, by idempotency key
	n := 0
	_, f.err = ledger.Scan(root, []ledger.Segment{seg}, ledger.ScanOptions{Workers: 1, Ahead: 8, SkipOutput: !q.Output}, func(e *ledger.Event) error {
		if n++; n%4096 == 0 {
			select {
			case <-stop:
				return errStopped
			default:
			}
		}
		if e.TS.Before(since) || !q.matches(e) {
			return nil
		}
		id := e.RunID()
		switch e.Event {
		case ledger.RunClaimed:
			t := fromEvent(e)
			t.Status, t.Approval = "running", approvals[e.IdempotencyKey]
			open[id] = t
		case ledger.ApprovalApproved:
			approvals[e.IdempotencyKey] = decided("approved", e)
		case ledger.ApprovalRejected:
			if !q.wants("skipped") {
				return nil
			}
			t := fromEvent(e)
			t.Status, t.Reason, t.Approval, t.Ended = "skipped", ledger.ReasonRejected, decided("rejected", e), e.TS
			f.tasks = append(f.tasks, t)
		case ledger.RunCompleted, ledger.RunFailed:
			status := "completed"
			if e.Event == ledger.RunFailed {
				status = "failed"
			}
			t, ok := open[id]
			if !ok {
				t = fromEvent(e)
			}
			t.Ended, t.Usage, t.Error, t.Output, t.Reason, t.Status = e.TS, e.Usage, e.Error, e.Output, e.Reason, status
			switch {
			case !ok:
				f.orphans[id] = t
			case q.wants(status) || status == "completed" && q.wants("rolled_back"):
				f.tasks = append(f.tasks, t)
			}
			delete(open, id)
		case ledger.RollbackCompleted:
			var d state.RollbackDetail
			if json.Unmarshal(e.Detail, &d) == nil {
				f.rollbacks = append(f.rollbacks, d.Run)
			}
		case ledger.RunSkipped:
			if !q.wants("skipped") {
				return nil
			}
			t := fromEvent(e)
			t.Status, t.Reason, t.Error, t.Ended = "skipped", e.Reason, e.Error, e.TS
			f.tasks = append(f.tasks, t)
		}
		return nil
	})
	for _, t := range open {
		f.tasks = append(f.tasks, t)
	}
	return f
}

var errStopped = errors.New("stopped")

// decided says who approved or rejected a slot and, when they said, why.
func decided(verb string, e *ledger.Event) string {
	s := verb + " by " + e.By
	if e.Comment != "" {
		s += ": " + e.Comment
	}
	return s
}

// Drafts are the dry runs' output the approval requests of keys carry
// (approval.requested of an L1 schedule), by idempotency key, read from
// the ledger files since since.
func Drafts(store *ledger.Store, since time.Time, keys map[string]bool) (map[string]string, error) {
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	segs, err := store.Segments()
	if err != nil {
		return nil, err
	}
	from := ledger.Month(since)
	segs = segs[sort.Search(len(segs), func(i int) bool { return segs[i].Month >= from }):]
	_, err = ledger.Scan(store.Root(), segs, ledger.ScanOptions{}, func(e *ledger.Event) error {
		if e.Event == ledger.ApprovalRequested && keys[e.IdempotencyKey] && e.Output != "" {
			out[e.IdempotencyKey] = e.Output
		}
		return nil
	})
	return out, err
}

// backReader folds files from the newest back: the newest alone (a
// bounded query often needs no more), then as many at a time as there are
// CPUs, a few ahead of the consumer.
type backReader struct {
	results []chan *fileTasks // newest first
	taken   chan struct{}     // one per result consumed
	stop    chan struct{}
	done    chan struct{}
	i       int
}

func newBackReader(root string, segs []ledger.Segment, q Query, since time.Time) *backReader {
	r := &backReader{results: make([]chan *fileTasks, len(segs)), taken: make(chan struct{}, len(segs)),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range r.results {
		r.results[i] = make(chan *fileTasks, 1)
	}
	workers := runtime.GOMAXPROCS(0)
	go func() {
		defer close(r.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		ahead := 0 // files being read or read and not yet consumed
		for i := range segs {
			seg := segs[len(segs)-1-i]
			limit := workers
			if i == 1 {
				limit = 1 // the newest file must have been consumed
			}
			for ahead >= limit {
				select {
				case <-r.taken:
					ahead--
				case <-r.stop:
					return
				}
			}
			ahead++
			wg.Go(func() { r.results[i] <- fold(root, seg, q, since, r.stop) })
		}
	}()
	return r
}

// next is the next older file's tasks.
func (r *backReader) next() (*fileTasks, error) {
	f := <-r.results[r.i]
	r.i++
	r.taken <- struct{}{}
	return f, f.err
}

func (r *backReader) close() {
	close(r.stop)
	<-r.done
}
