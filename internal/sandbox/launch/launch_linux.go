package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// The launcher uses the kernel's interface as it is (the syscall package
// has no names for these): golang.org/x/sys/unix would be initialised
// after most of astra's other dependencies, and the launcher with it.
const (
	prCapbsetDrop       = 24
	prSetChildSubreaper = 36
	prSetNoNewPrivs     = 38

	sysLandlockRestrictSelf = 446 // the same number on every architecture
)

// capabilities reach around a filesystem view for a tool running as root:
// raw I/O (/proc/kcore, /dev/mem), ptrace, mounts and other admin, file
// handles (open_by_handle_at), device nodes, BPF and perf, modules, reboot
// and the LSMs' own.
var capabilities = []uintptr{
	17, // CAP_SYS_RAWIO
	19, // CAP_SYS_PTRACE
	21, // CAP_SYS_ADMIN
	16, // CAP_SYS_MODULE
	2,  // CAP_DAC_READ_SEARCH
	27, // CAP_MKNOD
	39, // CAP_BPF
	38, // CAP_PERFMON
	22, // CAP_SYS_BOOT
	33, // CAP_MAC_ADMIN
	32, // CAP_MAC_OVERRIDE
}

func init() {
	if file := os.Getenv(Env); file != "" {
		launch(file) // never returns
	}
}

// launch is the launcher's whole life: it becomes the tool, or says why
// it could not and exits as a shell does (127: not found, 126: not run).
func launch(file string) {
	// The restrictions below apply to this thread, which execve keeps; no
	// other goroutine may run on it meanwhile.
	runtime.LockOSThread()
	err := become(file)
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	fmt.Fprintf(os.Stderr, "astra: could not start the tool: %v\n", err)
	os.Exit(code)
}

func become(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("launch spec: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Env+"=") {
			env = append(env, kv)
		}
	}
	// Orphans of the tool's processes come to the tool while it lives, so
	// that astra finds them when it ends (the setting survives execve).
	if err := prctl(prSetChildSubreaper, 1); err != nil {
		return fmt.Errorf("child subreaper: %w", err)
	}
	// Without CAP_SETPCAP (not root) there is nothing to drop and the
	// calls fail harmlessly.
	for _, c := range capabilities {
		_ = prctl(prCapbsetDrop, c)
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if s.Ruleset {
		if _, _, e := syscall.Syscall(sysLandlockRestrictSelf, RulesetFD, uintptr(s.RestrictFlags), 0); e != 0 {
			return fmt.Errorf("landlock: %w", e)
		}
		// The tool has no use for the ruleset.
		_ = syscall.Close(RulesetFD)
	}
	return syscall.Exec(s.Path, s.Args, env)
}

func prctl(option, arg uintptr) error {
	if _, _, e := syscall.Syscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
