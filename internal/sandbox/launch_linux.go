package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/astra-gitops/astra/internal/sandbox/launch"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func init() {
	// astra itself is not dumpable: its /proc/<pid>/environ and memory
	// (its tokens and keys) are closed to other processes of its user.
	// (The launcher, package launch, has become the tool before this.)
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
// started is to be called once the command has started (or will not): it
// closes astra's copy of the view's ruleset.
func Command(path string, args, env []string, p *Policy, dir string, getenv func(string) string) (cmd *exec.Cmd, started func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		cmd := exec.Command(path)
		cmd.Args, cmd.Env = args, env
		return cmd, func() {}, nil
	}
	s := launch.Spec{Path: path, Args: args}
	var ruleset *os.File
	if p != nil {
		if _, ok := Available(); ok {
			v, err := p.resolve(getenv)
			if err != nil {
				return nil, nil, err
			}
			// The ruleset is made here and handed to the launcher, which
			// only restricts itself with it: the view's paths are opened
			// once, by astra, and the launcher stays small.
			fd, flags, err := rulesetOf(v)
			if err != nil {
				return nil, nil, fmt.Errorf("landlock: %w", err)
			}
			if fd >= 0 {
				ruleset = os.NewFile(uintptr(fd), "landlock-ruleset")
				s.Ruleset, s.RestrictFlags = true, flags
			}
		}
	}
	started = func() {
		if ruleset != nil {
			ruleset.Close()
		}
	}
	b, err := json.Marshal(s)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "launch.json"), b, 0o600)
	}
	if err != nil {
		started()
		return nil, nil, err
	}
	cmd = exec.Command(exe)
	cmd.Args = []string{"astra-tool"}
	cmd.Env = append(append([]string(nil), env...), launch.Env+"="+filepath.Join(dir, "launch.json"))
	if ruleset != nil {
		cmd.ExtraFiles = []*os.File{ruleset} // the launcher's launch.RulesetFD
	}
	return cmd, started, nil
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

// rulesetOf makes the Landlock ruleset of v: fd is -1 where the kernel
// handles none of its rights (best effort), flags are those
// landlock_restrict_self is to be called with.
func rulesetOf(v *view) (fd, flags int, err error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return -1, 0, nil // no Landlock here: Available says so, the runner's checks stand
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
	fd, f, err := cfg.NewRulesetFD(rules...)
	return fd, int(f), err
}
