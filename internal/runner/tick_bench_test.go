package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/seal"
	"github.com/astra-gitops/astra/internal/state"
)

// The benchmarks of a cron tick on a month that already holds 10k, 100k
// and 1M events (generated, 2,000 schedules): what a run costs should not
// grow with the month. A tick is load (snapshot + the events after it, or
// a full replay) + decide + append + commit, in a real git repository;
// the configuration has 2,000 schedules of which 20 are due every five
// minutes (the rest fire once a year), and a run takes at most 20 places,
// so each tick does the same work whatever retries the generated month
// left open: what differs is only what the month holds.

// benchRepo is a git repository holding a generated month, its
// configuration, and a state snapshot written by a first run.
type benchRepo struct {
	dir  string
	now  time.Time       // the last tick's clock
	keys *ledgerkey.Keys // a sealed ledger's keys; nil: not sealed
}

func newBenchRepo(b *testing.B, dir string, events int, keys ...*ledgerkey.Keys) *benchRepo {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	gittest.Must(b, dir, "init", "-q", "-b", "main")
	tail, err := ledgertest.Generate(dir, ledgertest.Options{Events: events})
	if err != nil {
		b.Fatal(err)
	}
	var sched strings.Builder
	for i := range 2000 {
		cron := "0 9 1 1 *"
		if i < 20 {
			cron = "*/5 * * * *"
		}
		fmt.Fprintf(&sched, "- {id: %s, name: s%d, cron: %q, target_tool: ok}\n", ledgertest.ScheduleID(i), i, cron)
	}
	files := map[string]string{
		"schedules/s.yaml": sched.String(),
		"policies/p.yaml": "tools:\n  ok: {kind: exec, command: [\"true\"], tier: 0}\n" +
			"actors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3, rate_limit: {per_minute: 100000}}\n" +
			"budget: {daily_limit_usd: 100000, monthly_limit_usd: 1000000}\n",
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gittest.Must(b, dir, "add", "-A")
	gittest.Must(b, dir, "commit", "-q", "-m", "a month")
	r := &benchRepo{dir: dir, now: tail.TS.Add(time.Minute)}
	if len(keys) > 0 {
		r.keys = keys[0]
	}
	r.tick(b, r.now) // records the schedules and writes the snapshot (keyed: and seals them)
	// The generated month ends with claims and retries left open; the
	// ticks after it decide them (lost, dead-lettered) a batch at a time.
	// That is work, not history: drain it, so every size is measured in
	// the steady state.
	for drained := 0; ; drained++ {
		r.now = r.now.Add(5 * time.Minute)
		rep := r.tick(b, r.now)
		if rep.Count(ActionMissed)+rep.Count(ActionLost) == 0 {
			b.Logf("%d events: the generated backlog took %d ticks, to %s", events, drained+1, r.now.Format(time.RFC3339))
			break
		}
		if drained == 100 {
			b.Fatal("the generated backlog is not drained after 100 ticks")
		}
	}
	return r
}

// copy is a copy of r at dir (git's files, times and all), with r's clock:
// every run of a benchmark starts from the same month at the same time.
func (r *benchRepo) copy(b *testing.B, dir string) *benchRepo {
	b.Helper()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", r.dir, dir).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	return &benchRepo{dir: dir, now: r.now, keys: r.keys}
}

// tick runs run-due at now and commits (no remote to push to).
func (r *benchRepo) tick(b *testing.B, now time.Time) *Report {
	opts := Options{Limit: 20, MaxParallel: 4, NoPush: true}
	if r.keys == nil {
		return runDueIn(b, r.dir, now, opts)
	}
	b.Helper()
	cfg, diags, err := config.Load(r.dir)
	if err != nil || diags.Errors() > 0 {
		b.Fatalf("%v %v", err, diags)
	}
	g, err := gitops.Open(gitops.Options{Dir: r.dir, Now: func() time.Time { return now }, Sealing: r.keys.Commits()})
	if err != nil {
		b.Fatal(err)
	}
	opts.Root, opts.Clock, opts.Seals = r.dir, func() time.Time { return now }, r.keys.Ledger()
	rep, err := New(cfg, opts, executor.New(executor.Options{}), g, nil).RunDue(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// BenchmarkTickSealed is BenchmarkTick's snapshot tick in a repository
// whose ledger is sealed: the walk to the newest sealed commit, the
// snapshot's seal and the seals of the members after it are checked, and
// what the tick writes is sealed. Compare with BenchmarkTick's
// events=1000000/snapshot (benchstat): the bound is 10% more.
func BenchmarkTickSealed(b *testing.B) {
	priv, pub, err := seal.Generate("bench")
	if err != nil {
		b.Fatal(err)
	}
	signer, err := seal.ParseSigner(priv)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := ledgerkey.New([]seal.PublicKey{pub}, signer)
	if err != nil {
		b.Fatal(err)
	}
	for _, events := range []int{10_000, 1_000_000} {
		dir := b.TempDir()
		b.Run(fmt.Sprintf("events=%d/snapshot", events), func(b *testing.B) {
			month := newBenchRepo(b, filepath.Join(dir, "month"), events, keys)
			repo := month.copy(b, filepath.Join(dir, "run"))
			var peak uint64
			runtime.GC()
			b.ResetTimer()
			for b.Loop() {
				repo.now = repo.now.Add(5 * time.Minute)
				var rep *Report
				peak = max(peak, peakHeap(func() { rep = repo.tick(b, repo.now) }))
				if len(rep.Warnings) > 0 {
					b.Fatalf("warnings: %q", rep.Warnings)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
		})
	}
}

// peakHeap samples the heap in use while fn runs.
func peakHeap(fn func()) uint64 {
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse+ms.StackInuse)
			select {
			case <-stop:
				done <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	return <-done
}

// BenchmarkTick: one cron tick (load + decide + append + commit) on a month
// of 10k, 100k and 1M events, starting from the state snapshot, and for
// comparison with the snapshot removed (a full replay of the month).
// Targets on 2 cores with the snapshot: 0.3 s and 50 MB at 1M events,
// the same at 10k.
func BenchmarkTick(b *testing.B) {
	for _, events := range []int{10_000, 100_000, 1_000_000} {
		var month *benchRepo
		dir := b.TempDir() // outlives the sub-benchmarks that share it
		for _, load := range []string{"snapshot", "replay"} {
			b.Run(fmt.Sprintf("events=%d/%s", events, load), func(b *testing.B) {
				if month == nil {
					month = newBenchRepo(b, filepath.Join(dir, "month"), events)
				}
				repo := month.copy(b, filepath.Join(dir, "run"))
				var peak uint64
				ran, recorded := 0, 0
				runtime.GC()
				b.ResetTimer()
				for b.Loop() {
					repo.now = repo.now.Add(5 * time.Minute)
					if load == "replay" {
						b.StopTimer()
						os.Remove(filepath.Join(repo.dir, state.SnapshotPath))
						runtime.GC()
						b.StartTimer()
					}
					var rep *Report
					peak = max(peak, peakHeap(func() { rep = repo.tick(b, repo.now) }))
					ran += rep.Count(ActionRan)
					recorded += rep.Count(ActionMissed) + rep.Count(ActionLost)
					if (len(rep.Warnings) > 0) != (load == "replay") {
						b.Fatalf("warnings: %q", rep.Warnings)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
				b.ReportMetric(float64(ran)/float64(b.N), "ran/tick")
				b.ReportMetric(float64(recorded)/float64(b.N), "missed+lost/tick")
			})
		}
	}
}

// packBytes is what a clone holds in packs: what it fetched.
func packBytes(b *testing.B, dir string) float64 {
	b.Helper()
	for _, l := range strings.Split(gittest.Must(b, dir, "count-objects", "-v"), "\n") {
		if v, ok := strings.CutPrefix(l, "size-pack: "); ok {
			kib, _ := strconv.ParseFloat(v, 64)
			return kib * 1024
		}
	}
	b.Fatal("no size-pack")
	return 0
}

// BenchmarkCheckout: the bytes a run's checkout fetches from a repository
// holding a month of 1M events: the sparse, partial, shallow clone of astra
// init's workflow against a plain shallow clone (actions/checkout's
// default). Target: the sparse checkout under 5 MB.
func BenchmarkCheckout(b *testing.B) {
	repo := newBenchRepo(b, b.TempDir(), 1_000_000)
	bare := filepath.Join(b.TempDir(), "remote.git")
	gittest.Must(b, ".", "clone", "-q", "--bare", repo.dir, bare)
	gittest.Must(b, bare, "config", "uploadpack.allowFilter", "true")
	var sparse, full float64
	b.ResetTimer()
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "sparse")
		gittest.Must(b, ".", "clone", "-q", "--depth", "1", "--filter=blob:none", "--sparse", "file://"+bare, dir)
		gittest.Must(b, dir, "sparse-checkout", "set", "--no-cone", "/*", "!/var/schedules/", "!/var/memory/")
		list, err := os.ReadFile(filepath.Join(dir, state.SparsePath))
		if err != nil {
			b.Fatal(err)
		}
		gittest.Must(b, dir, append([]string{"sparse-checkout", "add"}, strings.Fields(string(list))...)...)
		sparse = packBytes(b, dir)
		dir = filepath.Join(b.TempDir(), "full")
		gittest.Must(b, ".", "clone", "-q", "--depth", "1", "file://"+bare, dir)
		full = packBytes(b, dir)
	}
	b.ReportMetric(sparse/1e6, "sparse-MB")
	b.ReportMetric(full/1e6, "full-MB")
}

// gitSizes is what `git count-objects -v` says: packed and loose bytes.
func gitSizes(b *testing.B, dir string) (pack, loose float64) {
	b.Helper()
	for _, l := range strings.Split(gittest.Must(b, dir, "count-objects", "-v"), "\n") {
		if v, ok := strings.CutPrefix(l, "size-pack: "); ok {
			kib, _ := strconv.ParseFloat(v, 64)
			pack = kib * 1024
		}
		if v, ok := strings.CutPrefix(l, "size: "); ok {
			kib, _ := strconv.ParseFloat(v, 64)
			loose = kib * 1024
		}
	}
	return pack, loose
}

// stateBytes sums the packed size (after git gc: deltas where git found
// them) of the blobs of path prefix that commits after base brought in.
func stateBytes(b *testing.B, dir, base, prefix string) float64 {
	b.Helper()
	objs := gittest.Must(b, dir, "rev-list", "--objects", base+"..HEAD", "--", prefix)
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(objs), "\n") {
		if id, p, ok := strings.Cut(l, " "); ok && strings.HasPrefix(p, prefix) {
			ids = append(ids, id)
		}
	}
	cmd := exec.Command("git", "cat-file", "--batch-check=%(objectsize:disk)")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(strings.Join(ids, "\n")+"\n")
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, f := range strings.Fields(string(out)) {
		n, _ := strconv.ParseFloat(f, 64)
		total += n
	}
	return total
}

// BenchmarkGrowth: what a day of cron ticks (288, one every five minutes,
// 20 tasks each) adds to a repository whose month holds 1M events, after
// `git gc`: in all, in the ledger segments (the events themselves), and in
// the state snapshot files. The snapshot must not make history grow by
// more than the events do. Per month is per tick times 8,640.
func BenchmarkGrowth(b *testing.B) {
	const ticks = 288
	for b.Loop() {
		b.StopTimer()
		repo := newBenchRepo(b, b.TempDir(), 1_000_000)
		gittest.Must(b, repo.dir, "gc", "-q")
		base := strings.TrimSpace(gittest.Must(b, repo.dir, "rev-parse", "HEAD"))
		before, _ := gitSizes(b, repo.dir)
		b.StartTimer()
		for range ticks {
			repo.now = repo.now.Add(5 * time.Minute)
			repo.tick(b, repo.now)
		}
		b.StopTimer()
		_, loose := gitSizes(b, repo.dir)
		gittest.Must(b, repo.dir, "gc", "-q")
		after, _ := gitSizes(b, repo.dir)
		ledgerKB := stateBytes(b, repo.dir, base, "var/schedules/") / 1024 / ticks
		stateKB := stateBytes(b, repo.dir, base, "var/state/") / 1024 / ticks
		b.ReportMetric((after-before)/1024/ticks, "gc-KB/tick")
		b.ReportMetric(loose/1024/ticks, "loose-KB/tick")
		b.ReportMetric(ledgerKB, "ledger-KB/tick")
		b.ReportMetric(stateKB, "state-KB/tick")
		b.ReportMetric((after-before)/ticks*8640/1e6, "gc-MB/month")
		b.StartTimer()
	}
}
