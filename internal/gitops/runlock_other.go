//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gitops

import "os"

// tryLock: this system has no advisory file locks astra uses, so runs in
// one checkout are not kept apart (the index lock still guards git's files).
func tryLock(*os.File) (held bool, err error) { return false, nil }
