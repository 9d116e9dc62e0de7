//go:build !linux

package sandbox

import "os/exec"

// Available reports that tools run without a filesystem view here: only
// Linux has Landlock.
func Available() (abi int, ok bool) { return 0, false }

// Command returns the command that runs the program path with args and
// env, as it is: without Landlock there is no view to start it in.
func Command(path string, args, env []string, _ *Policy, _ string, _ func(string) string) (cmd *exec.Cmd, started func(), err error) {
	cmd = exec.Command(path)
	cmd.Args, cmd.Env = args, env
	return cmd, func() {}, nil
}
