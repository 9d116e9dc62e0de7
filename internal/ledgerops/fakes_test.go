package ledgerops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Small fakes behind the package's interfaces (Mover, Sizer, History),
// over real ledger files: the decisions are tested without git.

func clock() time.Time { return moveNow }

// record appends schedule.created events for ids to the ledger under
// root, one append (one gzip member) each, as runs would.
func record(t *testing.T, root string, ids ...string) *state.Journal {
	t.Helper()
	store := ledger.Open(root, 0)
	st, tail, err := state.Replay(store, moveNow)
	if err != nil {
		t.Fatal(err)
	}
	j := state.NewJournal(store, st, tail, clock, false)
	for _, id := range ids {
		if err := j.Record(&ledger.Event{Event: ledger.ScheduleCreated, ScheduleID: id, Status: ledger.StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// tree reads the files under root, by slash path.
func tree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkout writes files out to a new directory.
func checkout(t *testing.T, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeRemote is a Mover over branches held in memory: a push is a
// compare-and-swap on the branch's tip, as gitops.Repo's is.
type fakeRemote struct {
	t         *testing.T
	tips      map[string]string            // branch → commit
	trees     map[string]map[string][]byte // commit → files
	protected map[string]bool              // branches that refuse pushes
	fail      map[string]error             // what pushes to a branch fail with
	before    func(branch string)          // runs before each push (a concurrent run)
	pushed    []string                     // branches pushed to, in order, taken or not
	commits   int
}

func newFakeRemote(t *testing.T) *fakeRemote {
	return &fakeRemote{t: t, tips: map[string]string{}, trees: map[string]map[string][]byte{},
		protected: map[string]bool{}, fail: map[string]error{}}
}

func (f *fakeRemote) FetchBranch(_ context.Context, branch string) (string, error) {
	return f.tips[branch], nil
}

func (f *fakeRemote) Files(commit string, paths ...string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for p, data := range f.trees[commit] {
		if under(p, paths) {
			out[p] = data
		}
	}
	return out, nil
}

func (f *fakeRemote) PushFiles(_ context.Context, branch, parent string, paths []string, files map[string][]byte, _ string) (string, error) {
	f.pushed = append(f.pushed, branch)
	if f.before != nil {
		f.before(branch)
	}
	switch {
	case f.fail[branch] != nil:
		return "", f.fail[branch]
	case f.protected[branch]:
		return "", fmt.Errorf("push %s: %w", branch, gitops.ErrProtected)
	case f.tips[branch] != parent:
		return "", gitops.ErrRejected
	}
	next := map[string][]byte{}
	for p, data := range f.trees[parent] {
		if !under(p, paths) {
			next[p] = data
		}
	}
	for p, data := range files {
		if !under(p, paths) {
			f.t.Fatalf("push of %s outside %v", p, paths)
		}
		next[p] = data
	}
	return f.commit(branch, next), nil
}

func under(p string, paths []string) bool {
	for _, q := range paths {
		if p == q || strings.HasSuffix(q, "/") && strings.HasPrefix(p, q) {
			return true
		}
	}
	return false
}

// commit sets branch to a new commit holding files.
func (f *fakeRemote) commit(branch string, files map[string][]byte) string {
	f.commits++
	c := fmt.Sprintf("%040x", f.commits)
	f.trees[c], f.tips[branch] = files, c
	return c
}

// extend appends events for ids to branch's ledger (a new branch when it
// has none), as a run on it would.
func (f *fakeRemote) extend(branch string, ids ...string) {
	root := checkout(f.t, f.trees[f.tips[branch]])
	record(f.t, root, ids...)
	f.commit(branch, tree(f.t, root))
}

// ledger is branch's ledger, replayed, and its events (ledger.migrated
// with its status).
func (f *fakeRemote) ledger(branch string) (*state.State, string) {
	f.t.Helper()
	root := checkout(f.t, f.trees[f.tips[branch]])
	segs, err := ledger.Open(root, 0).Segments()
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := ledger.Verify(root, segs); err != nil {
		f.t.Fatalf("ledger of %s: %v", branch, err)
	}
	evs, _, err := ledger.ReadAll(root, segs)
	if err != nil {
		f.t.Fatal(err)
	}
	st, _, err := state.Replay(ledger.Open(root, 0), moveNow)
	if err != nil {
		f.t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		k := string(e.Event)
		switch e.Event {
		case ledger.LedgerMigrated:
			k += ":" + e.Status
		case ledger.ScheduleCreated:
			k = e.ScheduleID
		}
		kinds = append(kinds, k)
	}
	return st, strings.Join(kinds, " ")
}

// fakeSizes is a Sizer: how many bytes of each file git holds.
type fakeSizes struct {
	committed, pushed map[string]int64
	err               error
}

func (s fakeSizes) CommittedFileSize(path string) (int64, bool, error) {
	n, ok := s.committed[path]
	return n, ok, s.err
}

func (s fakeSizes) RemoteFileSize(path string) (int64, bool, error) {
	n, ok := s.pushed[path]
	return n, ok, s.err
}

// fakeHistory is a History: astra's commit messages, newest first.
type fakeHistory struct {
	msgs []gitops.CommitMessage
	err  error
}

func (h fakeHistory) CommitMessagesUntil(stop func(gitops.CommitMessage) bool) ([]gitops.CommitMessage, error) {
	for i, m := range h.msgs {
		if stop(m) {
			return h.msgs[:i+1], h.err
		}
	}
	return h.msgs, h.err
}
