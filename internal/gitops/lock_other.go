//go:build !linux

package gitops

import "os"

// lockHolder cannot see other processes' open files here: a lock is then
// judged by its age alone (older than the run: stale).
func lockHolder(lock string, fi os.FileInfo, worktree string) (int, string) { return 0, "" }
