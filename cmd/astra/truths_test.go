package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExampleToolReadsPreviousOutput: the example tool reads the variable
// astra sets for a chained step's input, ASTRA_PREVIOUS_OUTPUT.
func TestExampleToolReadsPreviousOutput(t *testing.T) {
	cmd := exec.Command("sh", "scripts/tools/summarize.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "ASTRA_PREVIOUS_OUTPUT=the report is ready")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "previous step said: the report is ready") {
		t.Fatalf("summarize.sh ignored ASTRA_PREVIOUS_OUTPUT:\n%s", out)
	}
}

// TestNoInternalCitations: code comments, example policies and
// user-facing text say what they mean, not which internal document
// ("seed 001") asked for it; a user has never seen those.
func TestNoInternalCitations(t *testing.T) {
	cite := regexp.MustCompile(`(?i)\bseed 00[0-9]\b`)
	self, _ := filepath.Abs("truths_test.go")
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "var" || name == "testdata" && strings.Contains(p, "githubtest") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".yaml", ".yml", ".md", ".sh", ".txtar", ".json":
		default:
			return nil
		}
		if abs, _ := filepath.Abs(p); abs == self {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if cite.MatchString(line) {
				t.Errorf("%s:%d cites an internal document: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
