package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// launchEnv names the launch spec of a tool: astra run again with it set
// is the launcher, which becomes the tool (see the package comment).
const launchEnv = "ASTRA_INTERNAL_SANDBOX"

// spec is what the launcher is told: the tool's program and argv, and its
// view (nil: none, only no_new_privs and the rest).
type spec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	View *view    `json:"view,omitempty"`
}

func init() {
	if file := os.Getenv(launchEnv); file != "" {
		launch(file) // never returns
	}
	// astra itself is not dumpable: its /proc/<pid>/environ and memory
	// (its tokens and keys) are closed to other processes of its user.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// Available reports the Landlock ABI of the kernel, and whether tools run
// in a Landlock view: not where the kernel has none (abi 0), nor where
// ASTRA_SANDBOX=off turns the view off (abi above 0). Where they do not,
// the promises of the package comment hold detectively only.
func Available() (abi int, ok bool) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, false
	}
	if _, err := os.Executable(); err != nil || os.Getenv(OffEnv) == "off" {
		return abi, false
	}
	return abi, true
}

// Command returns the command that runs the program path with args
// (argv, its name first) and env, through the launcher. With a policy
// the tool runs in its view; the launch spec is written into dir, which
// must outlive the start of the command. getenv is astra's environment.
func Command(path string, args, env []string, p *Policy, dir string, getenv func(string) string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		cmd := exec.Command(path)
		cmd.Args, cmd.Env = args, env
		return cmd, nil
	}
	s := spec{Path: path, Args: args}
	if p != nil {
		if _, ok := Available(); ok {
			if s.View, err = p.resolve(getenv); err != nil {
				return nil, err
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "launch.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{"astra-tool"}
	cmd.Env = append(append([]string(nil), env...), launchEnv+"="+file)
	return cmd, nil
}

// launch is the launcher's whole life: it becomes the tool, or says why
// it could not and exits as a shell does (127: not found, 126: not run).
func launch(file string) {
	// Landlock and the prctls below apply to this thread, which execve
	// keeps; no other goroutine may run on it meanwhile.
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
	var s spec
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("launch spec: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launchEnv+"=") {
			env = append(env, kv)
		}
	}
	// Orphans of the tool's processes come to the tool while it lives, so
	// that astra finds them when it ends (the setting survives execve).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("child subreaper: %w", err)
	}
	dropCapabilities()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if s.View != nil {
		if err := restrict(s.View); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	return syscall.Exec(s.Path, s.Args, env)
}

// dropCapabilities removes, for a tool running as root, the capabilities
// that reach around a filesystem view: raw I/O (/proc/kcore, /dev/mem),
// ptrace, mounts and other admin, file handles (open_by_handle_at),
// device nodes, BPF and perf. Without CAP_SETPCAP (not root) there is
// nothing to drop and the calls fail harmlessly.
func dropCapabilities() {
	for _, c := range []uintptr{unix.CAP_SYS_RAWIO, unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_DAC_READ_SEARCH,
		unix.CAP_MKNOD, unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_BOOT, unix.CAP_MAC_ADMIN, unix.CAP_MAC_OVERRIDE} {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0)
	}
}

// Access rights of the view's rules.
const (
	readRights  = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSExecute
	writeRights = ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym
	devRights  = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	fileRights = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSExecute | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// handled is every filesystem right Landlock knows; the kernel's ABI
	// keeps what it has (best effort). Rights no rule grants (device
	// nodes, sockets outside the view) are denied everywhere.
	handled = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix
)

// restrict enforces v on this thread (the one that will execve).
func restrict(v *view) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return nil // no Landlock here: Available says so, the runner's checks stand
	}
	write := uint64(writeRights)
	if abi >= 2 {
		// Moves and links within the writable trees; never into or out of
		// the rest (a hard link of a protected file in a writable tree
		// would make it writable).
		write |= ll.AccessFSRefer
	}
	rules := []landlock.Rule{landlock.PathAccess(ll.AccessFSReadDir, "/")}
	add := func(rs []rule, rights uint64) {
		for _, r := range rs {
			a := rights
			if !r.Dir {
				a &= fileRights
			}
			rules = append(rules, landlock.PathAccess(landlock.AccessFSSet(a), r.Path).IgnoreIfMissing())
		}
	}
	add(v.Read, readRights)
	add(v.Write, readRights|write)
	add(v.Dev, devRights)
	cfg := landlock.Config{HandledAccessFS: handled, Scoped: ll.ScopeSignal | ll.ScopeAbstractUnixSocket}.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}
