package ledgerops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Moving the ledger between branches of a real bare remote, in the ways
// it can go wrong. testdata/script/migrate.txtar drives the whole story
// through the CLI.

var moveNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// moveFixture is a bare remote whose main holds a ledger of a few events,
// and a clone of it (which Migrate never touches).
type moveFixture struct {
	t      *testing.T
	remote string
	git    *gitops.Repo
}

func newMoveFixture(t *testing.T) *moveFixture {
	root := t.TempDir()
	f := &moveFixture{t: t, remote: filepath.Join(root, "remote.git")}
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", f.remote)
	seed := filepath.Join(root, "seed")
	gittest.Must(t, root, "init", "-q", "-b", "main", seed)
	f.record(seed, "a", "b")
	gittest.Must(t, seed, "push", "-q", f.remote, "main")
	clone := filepath.Join(root, "clone")
	gittest.Must(t, root, "clone", "-q", "file://"+f.remote, clone)
	var err error
	if f.git, err = gitops.Open(gitops.Options{Dir: clone}); err != nil {
		t.Fatal(err)
	}
	return f
}

// record appends schedule.created events for ids to the ledger in dir and
// commits them, as a run would.
func (f *moveFixture) record(dir string, ids ...string) {
	f.t.Helper()
	store := ledger.Open(dir, 0)
	st, tail, err := state.Replay(store, moveNow)
	if err != nil {
		f.t.Fatal(err)
	}
	j := state.NewJournal(store, st, tail, func() time.Time { return moveNow }, false)
	for _, id := range ids {
		if err := j.Record(&ledger.Event{Event: ledger.ScheduleCreated, ScheduleID: id, Status: ledger.StatusOK}); err != nil {
			f.t.Fatal(err)
		}
	}
	gittest.Must(f.t, dir, "add", "-A")
	gittest.Must(f.t, dir, "commit", "-qm", "record "+strings.Join(ids, " "))
}

// push appends events to branch of the remote through a clone of it, as
// a concurrent run would.
func (f *moveFixture) push(branch string, ids ...string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "other")
	gittest.Must(f.t, ".", "clone", "-q", "-b", branch, "file://"+f.remote, dir)
	f.record(dir, ids...)
	gittest.Must(f.t, dir, "push", "-q", "origin", branch)
}

// ledger is branch's ledger on the remote, replayed.
func (f *moveFixture) ledger(branch string) (*state.State, []string) {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "read")
	gittest.Must(f.t, ".", "clone", "-q", "-b", branch, "file://"+f.remote, dir)
	evs, _, err := ledger.ReadAll(dir, mustSegments(f.t, dir))
	if err != nil {
		f.t.Fatalf("ledger of %s: %v", branch, err)
	}
	st, _, err := state.Replay(ledger.Open(dir, 0), moveNow)
	if err != nil {
		f.t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		k := string(e.Event)
		if e.Event == ledger.LedgerMigrated {
			k += ":" + e.Status
		}
		kinds = append(kinds, k)
	}
	return st, kinds
}

func mustSegments(t *testing.T, dir string) []ledger.Segment {
	segs, err := ledger.Open(dir, 0).Segments()
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// protect makes the remote refuse pushes to branch as GitHub does.
func (f *moveFixture) protect(branch string) {
	hook := "#!/bin/sh\nwhile read o n ref; do [ \"$ref\" = refs/heads/" + branch + " ] && " +
		"{ echo 'error: GH006: Protected branch update failed for '$ref'.' >&2; exit 1; }; done; exit 0\n"
	if err := os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *moveFixture) unprotect() { _ = os.Remove(filepath.Join(f.remote, "hooks", "pre-receive")) }

func (f *moveFixture) migrate(g Mover, from, to string) (*Migration, error) {
	return Migrate(context.Background(), g, MigrateOptions{From: from, To: to, Clock: Clock{Now: func() time.Time { return moveNow }}, RunnerID: "test"})
}

// hooked lets a test act before each push of a move.
type hooked struct {
	Mover
	before func(branch string) error
}

func (h hooked) PushFiles(ctx context.Context, branch, parent string, paths []string, files map[string][]byte, msg string) (string, error) {
	if err := h.before(branch); err != nil {
		return "", err
	}
	return h.Mover.PushFiles(ctx, branch, parent, paths, files, msg)
}

// A run that pushes to the branch the ledger leaves while it moves is not
// left behind: the move starts over and takes its events along.
func TestMigrateRace(t *testing.T) {
	f := newMoveFixture(t)
	raced := false
	g := hooked{Mover: f.git, before: func(branch string) error {
		if branch == "main" && !raced {
			raced = true
			f.push("main", "c")
		}
		return nil
	}}
	m, err := f.migrate(g, "main", "astra-state")
	if err != nil {
		t.Fatal(err)
	}
	if m.Left != LeftRetired || m.Events != 4 {
		t.Fatalf("migration = %+v", m)
	}
	st, kinds := f.ledger("astra-state")
	if got := strings.Join(kinds, " "); got != "schedule.created schedule.created schedule.created ledger.migrated:ok" {
		t.Fatalf("astra-state holds %s", got)
	}
	if st.Home() != "astra-state" || st.Moved.Commit != gittest.Must(t, f.remote, "rev-parse", "main^") {
		t.Fatalf("home %q, taken from %s", st.Home(), st.Moved.Commit)
	}
	if main, _ := f.ledger("main"); main.Home() != "astra-state" {
		t.Fatal("main does not say where its ledger went")
	}
}

// A move the target refuses after the source took its event is cancelled,
// and that is recorded: the ledger stays where it was, usable.
func TestMigrateCancelled(t *testing.T) {
	f := newMoveFixture(t)
	if _, err := f.migrate(f.git, "main", "astra-state"); err != nil {
		t.Fatal(err)
	}
	mainBefore := gittest.Must(t, f.remote, "rev-parse", "main")
	f.protect("main")
	_, err := f.migrate(f.git, "astra-state", "main")
	var re *errkind.Error
	if !errors.As(err, &re) || !errors.Is(err, errkind.ErrUsage) || !errors.Is(err, gitops.ErrProtected) ||
		!strings.Contains(err.Error(), "the move was cancelled") || !strings.Contains(re.Hint, "refuses astra's pushes to main") {
		t.Fatalf("move to a protected main = %v (hint %q)", err, re.Hint)
	}
	if gittest.Must(t, f.remote, "rev-parse", "main") != mainBefore {
		t.Fatal("main changed")
	}
	st, kinds := f.ledger("astra-state")
	if got := strings.Join(kinds[len(kinds)-3:], " "); got != "ledger.migrated:ok ledger.migrated:ok ledger.migrated:failed" || st.Home() != "astra-state" {
		t.Fatalf("astra-state ends %s, home %q", got, st.Home())
	}
}

// A move that stopped halfway (the source took the event, the target did
// not, and recording the cancellation failed too) completes when run again.
func TestMigrateResumes(t *testing.T) {
	f := newMoveFixture(t)
	f.protect("astra-state")
	broken := hooked{Mover: f.git, before: func(branch string) error {
		if branch == "main" {
			if _, kinds := f.ledger("main"); kinds[len(kinds)-1] == "ledger.migrated:ok" {
				return errors.New("connection reset") // the cancellation does not get through
			}
		}
		return nil
	}}
	_, err := f.migrate(broken, "main", "astra-state")
	var re *errkind.Error
	if !errors.As(err, &re) || !strings.Contains(re.Hint, "Run `astra ledger migrate --to-branch astra-state` again") {
		t.Fatalf("half a move = %v", err)
	}
	if st, _ := f.ledger("main"); st.Home() != "astra-state" {
		t.Fatalf("main's home %q", st.Home())
	}
	f.unprotect()
	m, err := f.migrate(f.git, "main", "astra-state")
	if err != nil || m.Left != LeftRetired || m.Already {
		t.Fatalf("completing the move = %+v, %v", m, err)
	}
	_, kinds := f.ledger("astra-state")
	if got := strings.Join(kinds, " "); got != "schedule.created schedule.created ledger.migrated:ok" {
		t.Fatalf("astra-state holds %s", got)
	}
	if m, err := f.migrate(f.git, "main", "astra-state"); err != nil || !m.Already {
		t.Fatalf("moving again = %+v, %v", m, err)
	}
}

// A target branch that holds a ledger the source does not continue is
// never overwritten.
func TestMigrateRefusesAnotherLedger(t *testing.T) {
	f := newMoveFixture(t)
	dir := filepath.Join(t.TempDir(), "other")
	gittest.Must(t, ".", "init", "-q", "-b", "astra-state", dir)
	f.record(dir, "x")
	gittest.Must(t, dir, "push", "-q", f.remote, "astra-state")
	before := gittest.Must(t, f.remote, "rev-parse", "astra-state")
	_, err := f.migrate(f.git, "main", "astra-state")
	if !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), "astra-state already holds another ledger (newest event seq 1,") {
		t.Fatalf("move onto another ledger = %v", err)
	}
	if gittest.Must(t, f.remote, "rev-parse", "astra-state") != before {
		t.Fatal("the other ledger was overwritten")
	}
	if st, _ := f.ledger("main"); st.Home() != "" {
		t.Fatal("main took a move that did not happen")
	}
}
