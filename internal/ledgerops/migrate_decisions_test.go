package ledgerops

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
)

// Migrate's decisions against a fakeRemote: where the ledger goes, what
// the branch it leaves says, and what is refused before anything moves.

func fakeMove(f *fakeRemote, from, to string) (*Migration, error) {
	return Migrate(context.Background(), f, MigrateOptions{From: from, To: to, Clock: Clock{Now: clock}, RunnerID: "test"})
}

// A move to a branch the remote does not have: the source takes the
// event first, then the new branch gets the same ledger.
func TestMigrateToNewBranch(t *testing.T) {
	f := newFakeRemote(t)
	f.extend("main", "a", "b")
	source := f.tips["main"]
	m, err := fakeMove(f, "main", "astra-state")
	if err != nil {
		t.Fatal(err)
	}
	want := Migration{From: "main", To: "astra-state", Source: source, Commit: f.tips["astra-state"], Events: 3, Seq: 3, Left: LeftRetired}
	if *m != want {
		t.Fatalf("migration = %+v, want %+v", *m, want)
	}
	if !slices.Equal(f.pushed, []string{"main", "astra-state"}) {
		t.Fatalf("pushed to %v: the source must take the event first", f.pushed)
	}
	for _, branch := range []string{"main", "astra-state"} {
		st, evs := f.ledger(branch)
		if evs != "a b ledger.migrated:ok" || st.Home() != "astra-state" || st.Moved.Commit != source {
			t.Fatalf("%s holds %s, home %q, taken from %s", branch, evs, st.Home(), st.Moved.Commit)
		}
	}
	// Once moved, moving again changes nothing.
	again, err := fakeMove(f, "main", "astra-state")
	if err != nil || !again.Already || again.Events != 3 || again.Commit != m.Commit || len(f.pushed) != 2 {
		t.Fatalf("moving again = %+v, %v (pushed to %v)", again, err, f.pushed)
	}
}

// A target holding a copy of the ledger that the source continues (left
// there by an earlier move away from it) takes the ledger on top of it.
func TestMigrateOntoACopyItContinues(t *testing.T) {
	f := newFakeRemote(t)
	f.extend("main", "a")
	f.commit("astra-state", f.trees[f.tips["main"]])
	f.extend("main", "b")
	m, err := fakeMove(f, "main", "astra-state")
	if err != nil || m.Already || m.Events != 3 {
		t.Fatalf("migration = %+v, %v", m, err)
	}
	if _, evs := f.ledger("astra-state"); evs != "a b ledger.migrated:ok" {
		t.Fatalf("astra-state holds %s", evs)
	}
}

// A target holding another ledger, or one the source does not continue,
// is never overwritten, and the source takes no event.
func TestMigrateRefusesATargetItDoesNotContinue(t *testing.T) {
	for name, setup := range map[string]func(f *fakeRemote){
		"another ledger": func(f *fakeRemote) { f.extend("astra-state", "x") },
		"ahead of the source": func(f *fakeRemote) {
			f.commit("astra-state", f.trees[f.tips["main"]])
			f.extend("astra-state", "c")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeRemote(t)
			f.extend("main", "a", "b")
			setup(f)
			main, target := f.tips["main"], f.tips["astra-state"]
			_, err := fakeMove(f, "main", "astra-state")
			if !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), "astra-state already holds another ledger") ||
				!strings.Contains(err.Error(), "git push origin --delete astra-state") {
				t.Fatalf("move = %v", err)
			}
			if len(f.pushed) != 0 || f.tips["main"] != main || f.tips["astra-state"] != target {
				t.Fatalf("pushed to %v", f.pushed)
			}
		})
	}
}

// A protected source keeps the ledger as it was, frozen: it cannot race,
// so the move goes on without its event there.
func TestMigrateFromAProtectedSource(t *testing.T) {
	f := newFakeRemote(t)
	f.extend("main", "a", "b")
	f.protected["main"] = true
	source := f.tips["main"]
	m, err := fakeMove(f, "main", "astra-state")
	if err != nil || m.Left != LeftFrozen || m.Source != source || m.Seq != 3 {
		t.Fatalf("migration = %+v, %v", m, err)
	}
	if f.tips["main"] != source {
		t.Fatal("the protected main changed")
	}
	if st, evs := f.ledger("astra-state"); evs != "a b ledger.migrated:ok" || st.Home() != "astra-state" {
		t.Fatalf("astra-state holds %s, home %q", evs, st.Home())
	}
}

// A target that refuses after the source took the event cancels the move,
// recorded on the source, which stays the ledger's home. A refusal says
// what to allow (usage), an outage that running again may do (infra).
func TestMigrateCancelledMove(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail error
		kind error
		hint string
	}{
		{"protected target", nil, errkind.ErrUsage, "The remote refuses astra's pushes to astra-state"},
		{"remote down", errors.New("connection reset"), errkind.ErrInfra, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRemote(t)
			f.extend("main", "a", "b")
			f.protected["astra-state"] = tc.fail == nil
			f.fail["astra-state"] = tc.fail
			_, err := fakeMove(f, "main", "astra-state")
			hints := strings.Join(errkind.Hints(err), "\n")
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), "the move was cancelled") || !strings.HasPrefix(hints, tc.hint) || (tc.hint == "") != (hints == "") {
				t.Fatalf("move = %v (hints %q)", err, hints)
			}
			if st, evs := f.ledger("main"); evs != "a b ledger.migrated:ok ledger.migrated:failed" || st.Home() != "main" {
				t.Fatalf("main holds %s, home %q", evs, st.Home())
			}
			if _, ok := f.tips["astra-state"]; ok {
				t.Fatal("astra-state was created")
			}
		})
	}
}

// A move the target refuses whose cancellation does not reach the source
// either says how to complete it; running it again does.
func TestMigrateHalfAMove(t *testing.T) {
	f := newFakeRemote(t)
	f.extend("main", "a")
	f.fail["astra-state"] = errors.New("connection reset")
	f.before = func(branch string) {
		if branch == "main" && len(f.pushed) > 1 {
			f.fail["main"] = errors.New("connection reset") // the cancellation
		}
	}
	_, err := fakeMove(f, "main", "astra-state")
	if !errors.Is(err, errkind.ErrInfra) || len(errkind.Hints(err)) != 1 ||
		!strings.Contains(errkind.Hints(err)[0], "Run `astra ledger migrate --to-branch astra-state` again") {
		t.Fatalf("half a move = %v (hints %q)", err, errkind.Hints(err))
	}
	f.fail, f.before = map[string]error{}, nil
	m, err := fakeMove(f, "main", "astra-state")
	if err != nil || m.Left != LeftRetired || m.Already || m.Seq != 2 {
		t.Fatalf("completing the move = %+v, %v", m, err)
	}
	if _, evs := f.ledger("astra-state"); evs != "a ledger.migrated:ok" {
		t.Fatalf("astra-state holds %s", evs)
	}
}

// A run that pushes to the source meanwhile makes the move start over
// with its events; a source that never holds still is an outage.
func TestMigrateStartsOverWhenTheSourceMoves(t *testing.T) {
	f := newFakeRemote(t)
	f.extend("main", "a")
	raced := 0
	f.before = func(branch string) {
		if branch == "main" && raced < 2 {
			raced++
			f.extend("main", string(rune('b'+raced-1)))
		}
	}
	m, err := fakeMove(f, "main", "astra-state")
	if err != nil || m.Events != 4 {
		t.Fatalf("migration = %+v, %v", m, err)
	}
	if _, evs := f.ledger("astra-state"); evs != "a b c ledger.migrated:ok" {
		t.Fatalf("astra-state holds %s", evs)
	}

	f = newFakeRemote(t)
	f.extend("main", "a")
	f.before = func(branch string) { f.extend("main", "x") }
	_, err = fakeMove(f, "main", "astra-state")
	if !errors.Is(err, errkind.ErrInfra) || !errors.Is(err, gitops.ErrRejected) || !strings.Contains(err.Error(), "kept changing") ||
		len(f.pushed) != migrateRounds {
		t.Fatalf("move = %v after %d pushes", err, len(f.pushed))
	}
}

// What is refused before anything is pushed.
func TestMigrateRefusesBeforePushing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(f *fakeRemote)
		from, to string
		kind     error
		msg      string
	}{
		{"same branch", func(*fakeRemote) {}, "main", "main", errkind.ErrUsage, "the ledger is on main already"},
		{"no source branch", func(*fakeRemote) {}, "main", "astra-state", errkind.ErrUsage, "the remote has no branch main"},
		{"no ledger", func(f *fakeRemote) { f.commit("main", map[string][]byte{"README.md": []byte("hi")}) }, "main", "astra-state",
			errkind.ErrUsage, "holds no ledger in var/schedules"},
		{"moved elsewhere", func(f *fakeRemote) {
			f.extend("main", "a")
			if _, err := fakeMove(f, "main", "other"); err != nil {
				t.Fatal(err)
			}
			f.pushed = nil
		}, "main", "astra-state", errkind.ErrUsage, "move it from there (--from other)"},
		{"damaged source", func(f *fakeRemote) {
			f.extend("main", "a", "b")
			files := f.trees[f.tips["main"]]
			p := ledger.Dir + "/2026-11.ndjson.gz"
			files[p] = files[p][:len(files[p])-5]
		}, "main", "astra-state", errkind.ErrLedger, "the ledger on main (commit 0000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRemote(t)
			tc.setup(f)
			_, err := fakeMove(f, tc.from, tc.to)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("move = %v, want %v: …%s…", err, tc.kind, tc.msg)
			}
			if len(f.pushed) != 0 {
				t.Fatalf("pushed to %v", f.pushed)
			}
		})
	}
}

func TestSourceBranch(t *testing.T) {
	for _, tc := range []struct {
		setting, checkedOut, to string
		want                    string
	}{
		{"", "main", "astra-state", "main"},             // the ledger is on the checkout's branch
		{"astra-state", "main", "main", "astra-state"},  // moving back from the ledger's branch
		{"astra-state", "main", "astra-state", "main"},  // the setting already names the target
		{"astra-state", "", "elsewhere", "astra-state"}, // detached, but the setting says
		{"", "", "astra-state", ""},                     // detached: say --from
		{"astra-state", "", "astra-state", ""},          // detached, the setting names the target
	} {
		got, err := SourceBranch(tc.setting, tc.checkedOut, tc.to)
		if got != tc.want || (tc.want == "") != errors.Is(err, errkind.ErrUsage) {
			t.Errorf("SourceBranch(%q, %q, %q) = %q, %v; want %q", tc.setting, tc.checkedOut, tc.to, got, err, tc.want)
		}
	}
}
