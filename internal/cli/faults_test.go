package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
)

// TestFaultInjection kills astra (SIGKILL: no handler runs) at many points
// of real runs against a real bare remote whose pushes are slow: before
// the claim, while claiming, while the tool runs, between the tool's exit
// and its outcome, while committing and pushing. The tool is not
// idempotent; each run of it appends its run id and the time to a file
// outside the repository. After a last clean run:
//
//   - the ledger verifies, in the checkout and on the remote;
//   - every outcome recorded locally before a kill reached the remote;
//   - no tool outlived the astra that started it;
//   - a slot's tool ran again only after an attempt whose outcome was
//     never recorded (astra died between the tool's exit and its outcome),
//     and never after a recorded completion;
//   - every slot ended (completed or dead-lettered), at most one completion
//     each.
//
// The kill points are a sweep of delays over a measured clean run; each
// run's --now is 20 minutes after the last, so the claims of killed runs
// are lost, and retried, in the runs that follow. In the third repository
// the tool also appends bytes to the ledger, run without its sandbox
// (ASTRA_SANDBOX=off): astra cuts them wherever it is killed, so they never
// reach a commit, and a run killed before it cut them leaves them as a torn
// tail that the next run's --repair cuts.
// The fourth is a stateless runner: every run starts from a fresh clone,
// so what a killed run recorded and did not push goes with its checkout
// (counted, not checked: such an outcome is lost and its slot runs
// again). A kill leaves no moment to save it elsewhere: the window is the
// time from the tool's exit to its outcome's push (BenchmarkExitToOutcome);
// a push that fails instead is saved through GitHub's API
// (TestOutcomeSurvivesAStatelessRunner).
func TestFaultInjection(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal that stops a tool with astra is Linux's")
	}
	kills := 50
	if testing.Short() {
		kills = 12
	}
	// Four repositories at once: the runs mostly wait (on the tool, on
	// pushes), so two cores keep up.
	const repos = 4
	for i := range repos {
		t.Run(fmt.Sprintf("repo%d", i+1), func(t *testing.T) {
			t.Parallel()
			f := newFaultRig(t, i == 2)
			f.stateless = i == 3
			f.run() // schedules created
			f.run() // the first slot runs
			runTime := f.run()
			t.Logf("a clean run takes %v", runTime.Round(time.Millisecond))
			want := (kills + repos - 1) / repos
			phases := map[string]int{}
			for j := 0; f.killed < want && j < 3*want; j++ {
				// Spread the kill points over the run, in an order that
				// does not follow the clock, each repository at its own.
				frac := (float64((j*37+i*want/2)%want) + 0.5) / float64(want)
				f.killAfter(time.Duration(frac*float64(runTime)), phases)
			}
			t.Logf("%d kill points: %v", f.killed, phases)
			if f.killed < want {
				t.Errorf("only %d of %d runs were killed before they ended", f.killed, want)
			}
			for range 3 {
				f.run()
			}
			f.check()
		})
	}
}

// faultRig is one repository, its slow remote, and the runs so far.
type faultRig struct {
	t            *testing.T
	root, repo   string
	remote, side string
	now          time.Time
	lives        []life          // each astra process: when it started and ended
	recorded     map[string]bool // run ids seen completed in the local ledger after a kill
	killed       int
	tamper       bool // the tool appends to the ledger, without its sandbox
	// stateless: every run starts from a fresh clone of the remote, as
	// on a CI runner that keeps nothing (what a killed run recorded and
	// did not push is lost with its checkout).
	stateless bool
}

type life struct{ start, end time.Time }

func newFaultRig(t *testing.T, tamper bool) *faultRig {
	root := t.TempDir()
	f := &faultRig{t: t, root: root, repo: filepath.Join(root, "repo"), remote: filepath.Join(root, "remote.git"),
		side: filepath.Join(root, "side", "effects"), now: time.Date(2026, 11, 22, 0, 0, 30, 0, time.UTC), recorded: map[string]bool{}, tamper: tamper}
	if err := os.Mkdir(filepath.Dir(f.side), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", f.remote)
	gittest.Must(t, f.remote, "config", "receive.autogc", "false")
	// A slow remote: every push waits in its pre-receive hook.
	if err := os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte("#!/bin/sh\ncat >/dev/null\nsleep 0.15\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"schedules/s.yaml": `- {id: w, name: w, interval: 20m, target_tool: effect, per_day_budget: 1000}` + "\n",
		"policies/p.yaml": `tools:
  effect: {kind: exec, command: [./effect.sh], env: [SIDE], tier: local_write}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
		// Not idempotent: its side effect, last, outside the repository.
		"effect.sh": "#!/bin/sh\nsleep 0.1\necho \"$ASTRA_RUN_ID $(date +%s%N)\" >> \"$SIDE\"\n",
	}
	if tamper {
		files["effect.sh"] += "printf garbage >> var/schedules/2026-11.ndjson.gz\n"
	}
	gittest.Must(t, root, "init", "-q", "-b", "main", f.repo)
	for name, data := range files {
		p := filepath.Join(f.repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Must(t, f.repo, "add", "-A")
	gittest.Must(t, f.repo, "commit", "-qm", "seed")
	gittest.Must(t, f.repo, "remote", "add", "origin", f.remote)
	gittest.Must(t, f.repo, "push", "-q", "origin", "main")
	return f
}

// start starts `astra run-due` at the next --now.
func (f *faultRig) start() (*exec.Cmd, *bytes.Buffer) {
	f.t.Helper()
	if f.stateless && f.now.After(time.Date(2026, 11, 22, 0, 0, 30, 0, time.UTC)) {
		if err := os.RemoveAll(f.repo); err != nil {
			f.t.Fatal(err)
		}
		gittest.Must(f.t, f.root, "clone", "-q", f.remote, f.repo)
	}
	cmd := exec.Command("astra", "--repo", f.repo, "run-due", "--repair", "--now", f.now.Format(time.RFC3339), "--test-clock")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.root, "TMPDIR=" + os.TempDir(), "SIDE=" + f.side, "ASTRA_SANDBOX_WRITABLE=" + filepath.Dir(f.side),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}
	if f.tamper {
		cmd.Env = append(cmd.Env, "ASTRA_SANDBOX=off")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.now = f.now.Add(20 * time.Minute)
	return cmd, &out
}

// run runs astra to its end and returns how long it took.
func (f *faultRig) run() time.Duration {
	f.t.Helper()
	start := time.Now()
	cmd, out := f.start()
	f.ended(cmd.Wait(), out)
	f.t.Logf("CLEAN RUN %s:\n%s", f.now.Add(-20*time.Minute).Format(time.RFC3339), out)
	f.lives = append(f.lives, life{start, time.Now()})
	return time.Since(start)
}

// ended accepts a run that ended by itself: fine (0), with failures it
// recorded (1: runs found lost), or with its events spilled (3).
func (f *faultRig) ended(err error, out *bytes.Buffer) {
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && (ee.ExitCode() == 1 || ee.ExitCode() == 3)) {
		f.t.Fatalf("astra run-due: %v\n%s", err, out)
	}
}

// killAfter starts a run and kills it after d, noting where it was.
func (f *faultRig) killAfter(d time.Duration, phases map[string]int) {
	f.t.Helper()
	at := f.now
	start := time.Now()
	cmd, out := f.start()
	time.Sleep(d)
	_ = cmd.Process.Kill()
	err := cmd.Wait()
	f.lives = append(f.lives, life{start, time.Now()})
	f.quiet()
	f.t.Logf("KILLED RUN %s after %v:\n%s", at.Format(time.RFC3339), d, out)
	if st, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !st.Signaled() {
		f.ended(err, out)
		return // it ended before the kill
	}
	f.killed++
	f.checkRefs()
	local := readLedger(f.t, readFileOrNil(f.t, filepath.Join(f.repo, "var", "schedules", "2026-11.ndjson.gz")))
	remote := readLedger(f.t, f.remoteLedger())
	for _, e := range local {
		if e.Event == ledger.RunCompleted {
			f.recorded[e.RunID()] = true
		}
	}
	effects := f.effects()
	ph := phase(at, local, remote, effects, start)
	phases[ph]++
	f.t.Logf("PHASE %s", ph)
}

// checkRefs fails the test on an empty ref file: a ref rewritten in
// place, killed between the truncation and the write, which made every
// later run fail on "ref file is empty".
func (f *faultRig) checkRefs() {
	f.t.Helper()
	err := filepath.WalkDir(filepath.Join(f.repo, ".git", "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() == 0 && !strings.HasSuffix(p, ".lock") {
			f.t.Errorf("a kill left an empty ref: %s", p)
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// phase names where a killed run was, from what it left behind.
func phase(at time.Time, local, remote []ledger.Event, effects []effect, start time.Time) string {
	has := func(evs []ledger.Event, kind ledger.Kind) bool {
		return slices.ContainsFunc(evs, func(e ledger.Event) bool { return e.Event == kind && e.TS.Equal(at) })
	}
	ran := slices.ContainsFunc(effects, func(e effect) bool { return !e.at.Before(start) })
	switch {
	case !has(local, ledger.RunClaimed):
		return "before the claim"
	case !has(remote, ledger.RunClaimed):
		return "claim recorded, not pushed"
	case !ran && !has(local, ledger.RunCompleted):
		return "tool running"
	case !has(local, ledger.RunCompleted):
		return "tool exited, outcome not recorded"
	case !has(remote, ledger.RunCompleted):
		return "outcome recorded, not pushed"
	default:
		return "outcome pushed"
	}
}

// quiet waits for a push cut short by the kill to end on the remote's
// side (git-receive-pack outlives astra and may still move the branch).
// Runs do not yet push what an earlier run left unpushed before they
// decide: a push of theirs losing to such a late update would resync and
// drop those events. Once they do, this wait can go.
func (f *faultRig) quiet() {
	for i := 0; i < 500; i++ {
		busy := false
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(f.remote)) {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatalf("a push to %s did not end", f.remote)
}

type effect struct {
	run string
	at  time.Time
}

// effects are the tool's side effects so far.
func (f *faultRig) effects() []effect {
	var out []effect
	for _, line := range strings.Split(strings.TrimSpace(string(readFileOrNil(f.t, f.side))), "\n") {
		if line == "" {
			continue
		}
		run, ts, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			f.t.Fatalf("side effect %q", line)
		}
		out = append(out, effect{run, time.Unix(0, n)})
	}
	return out
}

// remoteLedger is the ledger file on the remote's main branch.
func (f *faultRig) remoteLedger() []byte {
	out, err := exec.Command("git", "--git-dir", f.remote, "cat-file", "blob", "main:var/schedules/2026-11.ndjson.gz").Output()
	if err != nil {
		return nil
	}
	return out
}

// check is the verdict after the last clean run.
func (f *faultRig) check() {
	t := f.t
	clone := filepath.Join(f.root, "check")
	gittest.Must(t, f.root, "clone", "-q", "file://"+f.remote, clone)
	for _, dir := range []string{f.repo, clone} {
		if out, err := exec.Command("astra", "--repo", dir, "ledger", "verify").CombinedOutput(); err != nil {
			t.Errorf("ledger verify in %s: %v\n%s", dir, err, out)
		}
	}
	final := readLedger(t, f.remoteLedger())
	completed := map[string]bool{}
	ended := map[string]int{}
	for _, e := range final {
		switch e.Event {
		case ledger.RunCompleted:
			completed[e.RunID()] = true
			ended[e.IdempotencyKey]++
		case ledger.RunDeadLettered:
			ended[e.IdempotencyKey]++
		case ledger.RunClaimed:
			if _, ok := ended[e.IdempotencyKey]; !ok {
				ended[e.IdempotencyKey] = 0
			}
		}
	}
	lostWithCheckout := 0
	for run := range f.recorded {
		switch {
		case completed[run]:
		case f.stateless:
			lostWithCheckout++ // its checkout went before a run could push it
		default:
			t.Errorf("run %s was recorded completed locally but never reached the remote", run)
		}
	}
	if f.stateless {
		t.Logf("stateless runner: %d outcomes recorded locally were lost with their checkout", lostWithCheckout)
	}
	for key, n := range ended {
		if n != 1 {
			t.Errorf("slot %s ended %d times, want once", key, n)
		}
	}
	// By slot: the attempts whose tool ran, in order.
	byKey := map[string][]effect{}
	seen := map[string]bool{}
	windows := 0
	for _, e := range f.effects() {
		if seen[e.run] {
			t.Errorf("run %s did its side effect twice", e.run)
		}
		seen[e.run] = true
		if !slices.ContainsFunc(f.lives, func(l life) bool { return !e.at.Before(l.start) && !e.at.After(l.end.Add(100*time.Millisecond)) }) {
			t.Errorf("run %s did its side effect at %s, when no astra was running: its tool outlived astra", e.run, e.at.Format(time.RFC3339Nano))
		}
		key, _, _ := strings.Cut(e.run, "#")
		byKey[key] = append(byKey[key], e)
	}
	for key, effs := range byKey {
		for _, e := range effs[:len(effs)-1] {
			if completed[e.run] {
				t.Errorf("slot %s ran again after %s had completed", key, e.run)

			} else {
				windows++ // astra died between this tool's exit and its outcome
			}
		}
	}
	t.Logf("%d slots, %d tool runs, %d second runs after a death between a tool's exit and its outcome", len(byKey), len(seen), windows)
}

// readLedger decodes a ledger file's events, up to a torn tail.
func readLedger(t *testing.T, b []byte) []ledger.Event {
	if len(b) == 0 {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	var out []ledger.Event
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e ledger.Event
		if ledger.Unmarshal(sc.Bytes(), &e) != nil {
			break
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("ledger read stopped: %v", err) // a torn tail
	}
	return out
}

func readFileOrNil(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(fmt.Errorf("read %s: %w", p, err))
	}
	return b
}
