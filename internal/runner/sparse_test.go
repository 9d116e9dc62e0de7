package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
	"github.com/astra-gitops/astra/internal/state"
)

const sparseSegment = 32 << 10

// month makes a bare repository (file://, partial clones allowed) holding a
// generated month of ledger, the configuration of one schedule due every
// five minutes, and a state snapshot written by a run in a full clone.
// It returns the bare repository and the time of the ledger's last event.
func month(t *testing.T, events int) (bare string, last time.Time) {
	t.Helper()
	root := t.TempDir()
	bare = filepath.Join(root, "remote.git")
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", bare)
	gittest.Must(t, bare, "config", "uploadpack.allowFilter", "true")
	seed := filepath.Join(root, "seed")
	gittest.Must(t, root, "init", "-q", "-b", "main", seed)
	files := map[string]string{
		"schedules/tick.yaml": "- {id: tick, name: tick, cron: \"*/5 * * * *\", target_tool: ok}\n",
		"policies/p.yaml": "tools:\n  ok: {kind: exec, command: [\"true\"], tier: 0}\n" +
			"actors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n" +
			"budget: {daily_limit_usd: 100000, monthly_limit_usd: 1000000}\n",
	}
	for p, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(seed, p)), 0o755)
		if err := os.WriteFile(filepath.Join(seed, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tail, err := ledgertest.Generate(seed, ledgertest.Options{Schedules: 200, Events: events, SegmentSize: sparseSegment})
	if err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, seed, "add", "-A")
	gittest.Must(t, seed, "commit", "-q", "-m", "a month")
	gittest.Must(t, seed, "remote", "add", "origin", "file://"+bare)
	gittest.Must(t, seed, "push", "-q", "origin", "main")
	// The first run after an upgrade: no snapshot yet, so it replays the
	// month, and commits the snapshot with its events.
	rep := tick(t, seed, tail.TS.Add(2*time.Minute))
	if !rep.Pushed || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "there is no "+state.SnapshotPath) {
		t.Fatalf("first run: pushed %v, warnings %q", rep.Pushed, rep.Warnings)
	}
	return bare, tail.TS
}

// tick runs run-due in the checkout at dir at now, with git.
func tick(t *testing.T, dir string, now time.Time) *Report {
	t.Helper()
	return runDueIn(t, dir, now, Options{SegmentSize: sparseSegment, RunnerID: filepath.Base(dir),
		Sleep: func(context.Context, time.Duration) error { return nil }})
}

// runDueIn runs run-due with opts in the git checkout at dir, at now.
func runDueIn(tb testing.TB, dir string, now time.Time, opts Options) *Report {
	tb.Helper()
	cfg, diags, err := config.Load(dir)
	if err != nil || diags.Errors() > 0 {
		tb.Fatalf("%v %v", err, diags)
	}
	g, err := gitops.Open(gitops.Options{Dir: dir, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	opts.Root, opts.Clock = dir, func() time.Time { return now }
	rep, err := New(cfg, opts, executor.New(executor.Options{}), g, nil).RunDue(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return rep
}

// sparseCheckout checks out the repository as astra init's workflow does:
// depth 1, no file contents up front, everything but the ledger's and
// memory's history, then the files the last run listed.
func sparseCheckout(t *testing.T, bare string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	gittest.Must(t, ".", "clone", "-q", "--depth", "1", "--filter=blob:none", "--sparse", "file://"+bare, dir)
	gittest.Must(t, dir, "sparse-checkout", "set", "--no-cone", "/*", "!/var/schedules/", "!/var/memory/")
	list, err := os.ReadFile(filepath.Join(dir, state.SparsePath))
	if err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, dir, append([]string{"sparse-checkout", "add"}, strings.Fields(string(list))...)...)
	return dir
}

// packKiB is what a clone holds in packs: what it fetched.
func packKiB(t *testing.T, dir string) int {
	t.Helper()
	for _, l := range strings.Split(gittest.Must(t, dir, "count-objects", "-v"), "\n") {
		if v, ok := strings.CutPrefix(l, "size-pack: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatal("no size-pack")
	return 0
}

// TestSparseCheckoutRuns: a run in the checkout the init workflow makes
// (a partial, sparse, shallow clone holding the newest ledger file and the
// state snapshot, not the month) starts from the snapshot, runs what is
// due, and pushes; a run that loses the push race to another such
// checkout syncs and pushes without fetching the month. The result is the
// ledger a full replay agrees with.
func TestSparseCheckoutRuns(t *testing.T) {
	bare, last := month(t, 15_000)
	one := sparseCheckout(t, bare)
	two := sparseCheckout(t, bare)
	checkSparse(t, one, bare)

	rep := tick(t, two, last.Add(7*time.Minute))
	if !rep.Pushed || len(rep.Warnings) > 0 || rep.Count(ActionRan) != 1 {
		t.Fatalf("run in a sparse checkout: pushed %v, warnings %q, outcomes %+v", rep.Pushed, rep.Warnings, rep.Outcomes)
	}
	rep = tick(t, one, last.Add(12*time.Minute)) // behind two's push
	if !rep.Pushed || rep.Raced == 0 || len(rep.Warnings) > 0 || rep.Count(ActionRan) != 1 {
		t.Fatalf("run that lost the race: pushed %v, raced %d, warnings %q, outcomes %+v", rep.Pushed, rep.Raced, rep.Warnings, rep.Outcomes)
	}
	if segs, _ := ledger.Open(one, sparseSegment).Segments(); len(segs) > 2 {
		t.Fatalf("the race brought the month into the checkout: %d ledger files", len(segs))
	}
	if missing := gittest.Must(t, one, "rev-list", "--objects", "--missing=print", "HEAD"); strings.Count(missing, "\n?") < 20 {
		t.Fatalf("the sync fetched the month's history")
	}

	st := fullReplay(t, bare, last.Add(13*time.Minute))
	if sc := st.Schedules["tick"]; sc == nil || sc.LastStatus != "completed" || !sc.LastSlot.Equal(last.Add(12*time.Minute).Truncate(5*time.Minute)) {
		t.Fatalf("tick in the replayed ledger: %+v", sc)
	}
}

// checkSparse: the sparse checkout dir of bare holds one ledger file of
// the month's many, and fetched a fraction of what a full checkout does.
func checkSparse(t *testing.T, dir, bare string) {
	t.Helper()
	segs, err := ledger.Open(dir, sparseSegment).Segments()
	if err != nil || len(segs) != 1 {
		t.Fatalf("ledger files checked out: %v %v", segs, err)
	}
	full := filepath.Join(t.TempDir(), "full")
	gittest.Must(t, ".", "clone", "-q", "--depth", "1", "file://"+bare, full)
	if all, _ := ledger.Open(full, sparseSegment).Segments(); len(all) < 20 {
		t.Fatalf("the month has only %d ledger files", len(all))
	}
	if sparse, whole := packKiB(t, dir), packKiB(t, full); sparse*4 > whole {
		t.Fatalf("the sparse checkout fetched %d KiB, a full one %d KiB", sparse, whole)
	}
}

// fullReplay clones the whole of bare, verifies its ledger and its
// snapshot against a full replay, and returns the replayed state at now.
func fullReplay(t *testing.T, bare string, now time.Time) *state.State {
	t.Helper()
	full := filepath.Join(t.TempDir(), "after")
	gittest.Must(t, ".", "clone", "-q", "file://"+bare, full)
	store := ledger.Open(full, sparseSegment)
	allSegs, _ := store.Segments()
	if _, err := ledger.Verify(full, allSegs); err != nil {
		t.Fatal(err)
	}
	check, err := state.VerifySnapshot(store)
	if err != nil || check.Note != "" {
		t.Fatalf("snapshot against a full replay: %+v %v", check, err)
	}
	st, _, err := state.ReplayEach(store, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSparseCheckoutUnusableSnapshot: after an upgrade that changes the
// snapshot's layout (or with a damaged snapshot), the init workflow's
// checkout holds neither a usable snapshot nor the month. The run fetches
// the month's ledger files once, replays them and writes a snapshot the
// next checkout starts from, instead of failing every tick from then on.
func TestSparseCheckoutUnusableSnapshot(t *testing.T) {
	bare, last := month(t, 15_000)
	dir := sparseCheckout(t, bare)
	snap := filepath.Join(dir, state.SnapshotPath)
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(data), "astra-state\t2\t", "astra-state\t1\t", 1) // as an older astra wrote it
	if err := os.WriteFile(snap, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, dir, "commit", "-qam", "an older snapshot")
	gittest.Must(t, dir, "push", "-q", "origin", "main")

	rep := tick(t, dir, last.Add(7*time.Minute))
	warned := strings.Join(rep.Warnings, "\n")
	if !rep.Pushed || rep.Count(ActionRan) != 1 || !strings.Contains(warned, "written by another version of astra") || !strings.Contains(warned, "git sparse-checkout add /var/schedules/2026-11.*") {
		t.Fatalf("run with an unusable snapshot: pushed %v, outcomes %+v, warnings %q", rep.Pushed, rep.Outcomes, rep.Warnings)
	}
	next := sparseCheckout(t, bare)
	rep = tick(t, next, last.Add(12*time.Minute))
	if !rep.Pushed || rep.Count(ActionRan) != 1 || len(rep.Warnings) > 0 {
		t.Fatalf("the next sparse run: pushed %v, outcomes %+v, warnings %q", rep.Pushed, rep.Outcomes, rep.Warnings)
	}
	if segs, _ := ledger.Open(next, sparseSegment).Segments(); len(segs) > 2 {
		t.Fatalf("the next checkout holds %d ledger files", len(segs))
	}
}

// widenGit is a sparse checkout whose widening fails with err.
type widenGit struct {
	*fakeGit
	err    error
	called int
}

func (w *widenGit) Widen(context.Context, string, string) error { w.called++; return w.err }

// TestWidenFailureIsInfrastructure: when the month's ledger files cannot
// be fetched, the run stops as a machine or network failure (exit 3, the
// next run tries again), not as bad input; nothing is recorded.
func TestWidenFailureIsInfrastructure(t *testing.T) {
	e := newEnv(t, daily)
	small := func(o *Options) { o.SegmentSize = 256 }
	for h := range 6 {
		e.runDue(fmt.Sprintf("2026-11-22T%02d:00:30Z", 8+h), small)
	}
	segs, err := ledger.Open(e.dir, 256).Segments()
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	// As a sparse checkout with an unusable snapshot: no snapshot, and not
	// the month's first file.
	os.Remove(filepath.Join(e.dir, segs[0].Path))
	e.git.leftOut = map[string]bool{segs[0].Path: true}
	snap := filepath.Join(e.dir, state.SnapshotPath)
	data, _ := os.ReadFile(snap)
	os.WriteFile(snap, []byte(strings.Replace(string(data), "astra-state\t2\t", "astra-state\t1\t", 1)), 0o644) // an older astra's
	before, _ := os.ReadFile(filepath.Join(e.dir, segs[len(segs)-1].Path))
	w := &widenGit{fakeGit: e.git, err: errors.New("fatal: unable to access the remote")}
	r := New(e.cfg, Options{Root: e.dir, Clock: func() time.Time { return time.Date(2026, 11, 22, 15, 0, 30, 0, time.UTC) }, RunnerID: "test", SegmentSize: 256,
		Sleep: func(context.Context, time.Duration) error { return nil }}, e.exec, w, nil)
	_, err = r.RunDue(context.Background())
	if w.called != 1 || !errors.Is(err, errkind.ErrInfra) || !errors.Is(err, state.ErrIncomplete) {
		t.Fatalf("widened %d times; error %v", w.called, err)
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, segs[len(segs)-1].Path)); !bytes.Equal(before, after) {
		t.Fatal("the failed run recorded something")
	}
}
