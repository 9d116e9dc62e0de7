//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/astra-gitops/astra/internal/gittest"
)

// openPTY opens a pseudo-terminal: what astra writes to tty, the test
// reads from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { pty.Close() })
	if err := unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return pty, tty
}

// onTerminal runs astra in dir with stdout and stderr on a terminal and
// returns what the terminal received.
func onTerminal(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("astra")
	mustDo(t, err)
	pty, tty := openPTY(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(gittest.Env(), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = tty, tty
	mustDo(t, cmd.Start())
	tty.Close()
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, pty) // ends with EIO once astra has exited
	if err := cmd.Wait(); err != nil {
		t.Fatalf("astra %s: %v\n%s", strings.Join(args, " "), err, screen.String())
	}
	return strings.ReplaceAll(screen.String(), "\r\n", "\n")
}

// On a terminal a run shows what runs now on a status line, which each
// outcome's line replaces, and which is gone when the report starts.
func TestRunDueProgressOnATerminal(t *testing.T) {
	dir := fixture(t, map[string]string{
		"schedules/s.yaml": "- {id: s, name: s, cron: \"0 9 * * *\", target_tool: t}\n- {id: u, name: u, cron: \"0 9 * * *\", target_tool: t}\n",
		"policies/p.yaml":  "tools:\n  t: {kind: exec, command: [echo, hi], tier: 0}\nactors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n",
	})
	onTerminal(t, dir, "run-due", "--no-git", "--now", "2026-11-22T08:59:00Z", "--test-clock")
	screen := onTerminal(t, dir, "run-due", "--no-git", "--max-parallel", "1", "--now", "2026-11-22T09:00:30Z", "--test-clock")
	const erase = "\r\x1b[K"
	want := "astra run-due at 2026-11-22T09:00:30Z\n" +
		"running s; 0 done" + erase + "astra: ran s\n" +
		"running u; 1 done" + erase + "astra: ran u\n" +
		"astra run-due at 2026-11-22T09:00:30Z\n  ran"
	if !strings.HasPrefix(screen, want) {
		t.Fatalf("the terminal shows\n%q\nwant it to start\n%q", screen, want)
	}
	if strings.Contains(screen, "astra: started") {
		t.Errorf("a terminal gets a status line, not a line per start:\n%q", screen)
	}
}
