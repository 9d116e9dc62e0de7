package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// killruns N DIR FROM STEP ARGS...: start `astra --repo DIR run-due
// --now T ARGS` N times, T going from FROM by STEP, and kill each run
// (SIGKILL) at a different moment: the i-th after (i*5 mod 12)*100 ms, so
// the kills land all over a run, from its start to past its end. This is
// a persistent runner's checkout being killed at any point; the script
// then checks what the next runs make of it. Only astra is killed: the
// git on the other end of a file:// remote plays the server, which
// carries on (as do the tools, orphaned).
func killRuns(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 {
		ts.Fatalf("usage: killruns n dir from step args...")
	}
	var n int
	fmt.Sscan(args[0], &n)
	from, err := time.Parse(time.RFC3339, args[2])
	ts.Check(err)
	step, err := time.ParseDuration(args[3])
	ts.Check(err)
	env := []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "TMPDIR=" + ts.Getenv("TMPDIR"),
		"SIDE=" + ts.Getenv("SIDE"), "ASTRA_SANDBOX_WRITABLE=" + ts.Getenv("ASTRA_SANDBOX_WRITABLE"), "GIT_CONFIG_NOSYSTEM=1"}
	var log bytes.Buffer
	for i := range n {
		now := from.Add(time.Duration(i) * step).Format(time.RFC3339)
		cmd := exec.Command("astra", append([]string{"--repo", args[1], "run-due", "--now", now, "--test-clock"}, args[4:]...)...)
		cmd.Path = filepath.Join(firstPathWith(ts.Getenv("PATH"), "astra"), "astra")
		cmd.Dir, cmd.Env = ts.Getenv("WORK"), env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		ts.Check(cmd.Start())
		delay := time.Duration(i*5%12) * 100 * time.Millisecond
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
			fmt.Fprintf(&log, "run %d at %s finished before its kill (%v)\n", i+1, now, err)
		case <-time.After(delay):
			_ = cmd.Process.Kill()
			err = <-done
			fmt.Fprintf(&log, "run %d at %s killed after %s (%v)\n", i+1, now, delay, err)
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs("killruns.log"), log.Bytes(), 0o644))
	ts.Logf("%s", log.String())
}
