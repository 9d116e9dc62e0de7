// Command testsummary reads `go test -json` on stdin and prints what a
// person needs: each package's result, the full output of failed tests,
// and every skipped test with its reason, so that a skip is never silent.
// It exits 1 when anything failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	out := map[string][]string{} // package/test -> output lines
	var failed, skipped []string
	failedPkgs := 0
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Println(sc.Text()) // build errors come as plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			out[key] = append(out[key], e.Output)
		case "fail":
			if e.Test == "" {
				failedPkgs++
				fmt.Printf("FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
				if len(out[key]) > 0 && !anyTestFailed(failed, e.Package) {
					fmt.Print(strings.Join(out[key], "")) // a build or TestMain failure
				}
			} else {
				failed = append(failed, key)
				fmt.Printf("--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(out[key], ""))
			}
		case "pass":
			if e.Test == "" {
				fmt.Printf("ok\t%s\t%.1fs\n", e.Package, e.Elapsed)
			}
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(out[key])))
			}
		}
	}
	sort.Strings(skipped)
	fmt.Printf("\n%d skipped test(s)\n", len(skipped))
	for _, s := range skipped {
		fmt.Println("  " + s)
	}
	if len(failed) > 0 || failedPkgs > 0 {
		fmt.Printf("\n%d failed test(s) in %d package(s)\n", len(failed), failedPkgs)
		os.Exit(1)
	}
}

func anyTestFailed(failed []string, pkg string) bool {
	for _, f := range failed {
		if strings.HasPrefix(f, pkg+" ") {
			return true
		}
	}
	return false
}

// reason is the message a test passed to t.Skip: its output lines other
// than go test's own === and --- lines.
func reason(lines []string) string {
	var r []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		r = append(r, l)
	}
	if len(r) == 0 {
		return "no reason given"
	}
	return strings.Join(r, " ")
}
