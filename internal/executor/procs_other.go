//go:build !linux && !windows

package executor

// becomeSubreaper: only Linux has child subreapers.
func becomeSubreaper() {}

// sweep: without a child subreaper, orphans of tools go to init; the
// process group kill is all there is.
func sweep() {}

// descendants: only the process groups are known here.
func descendants([]int) []int { return nil }
