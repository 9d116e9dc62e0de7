package approval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/model"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestToolFiles: an approval binds the directory of each script a tool
// names (what it sources sits there), a root-level script alone, and the
// files: globs instead of the directories; never what the tool writes.
func TestToolFiles(t *testing.T) {
	root := tree(t, map[string]string{
		"scripts/tools/deploy.sh": "", "scripts/tools/lib.sh": "", "scripts/tools/sub/x.py": "",
		"tool.sh": "", "other.sh": "", "make/Makefile": "", "lib/a.sh": "", "lib/b.txt": "", "lib/deep/c.sh": "",
		"var/state/snapshot": "",
	})
	for _, c := range []struct {
		name        string
		tool        model.Tool
		files, dirs []string
	}{
		{"a script in a directory", model.Tool{Kind: "exec", Command: []string{"sh", "scripts/tools/deploy.sh"}},
			[]string{"scripts/tools/deploy.sh", "scripts/tools/lib.sh", "scripts/tools/sub/x.py"}, []string{"scripts/tools"}},
		{"a script at the root", model.Tool{Kind: "exec", Command: []string{"sh", "tool.sh", "--flag", "/bin/x", "../up"}},
			[]string{"tool.sh"}, nil},
		{"a bare word naming a directory, and a rollback", model.Tool{Kind: "exec", Command: []string{"make", "-C", "make"}, Rollback: []string{"./tool.sh"}},
			[]string{"tool.sh"}, nil},
		{"what the tool writes is its output", model.Tool{Kind: "exec", Command: []string{"scripts/tools/deploy.sh"}, Writes: []string{"scripts/tools/sub/**"}},
			[]string{"scripts/tools/deploy.sh", "scripts/tools/lib.sh"}, []string{"scripts/tools"}},
		{"files: globs", model.Tool{Kind: "exec", Command: []string{"echo"}, Files: []string{"lib/*.sh", "*.sh"}},
			[]string{"lib/a.sh", "other.sh", "tool.sh"}, []string{"lib"}},
		{"files: replace the script's directory", model.Tool{Kind: "exec", Command: []string{"sh", "scripts/tools/deploy.sh"}, Files: []string{"lib/**"}},
			[]string{"lib/a.sh", "lib/b.txt", "lib/deep/c.sh", "scripts/tools/deploy.sh"}, []string{"lib"}},
		{"not exec", model.Tool{Kind: "http", Command: []string{"tool.sh"}}, nil, nil},
	} {
		files, dirs, err := ToolFiles(root, &c.tool)
		if err != nil || !slices.Equal(files, c.files) || !slices.Equal(dirs, c.dirs) {
			t.Errorf("%s: files %v dirs %v (%v), want %v %v", c.name, files, dirs, err, c.files, c.dirs)
		}
	}
}

// TestToolFilesRefuseLinks: a symbolic link among what a tool runs could
// point anywhere; it is refused, whole directory or named.
func TestToolFilesRefuseLinks(t *testing.T) {
	root := tree(t, map[string]string{"scripts/deploy.sh": "", "elsewhere/lib.sh": ""})
	if err := os.Symlink("../elsewhere/lib.sh", filepath.Join(root, "scripts", "lib.sh")); err != nil {
		t.Skip(err)
	}
	os.Symlink("scripts", filepath.Join(root, "linked"))
	for _, argv := range [][]string{{"sh", "scripts/deploy.sh"}, {"sh", "linked/deploy.sh"}} {
		_, _, err := ToolFiles(root, &model.Tool{Kind: "exec", Command: argv})
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%v: %v", argv, err)
		}
	}
}

// TestComputeBindsLoadedFiles: editing a file a script sources changes
// the action, and names the file.
func TestComputeBindsLoadedFiles(t *testing.T) {
	root := tree(t, map[string]string{"scripts/tools/deploy.sh": ". scripts/tools/lib.sh\n", "scripts/tools/lib.sh": "echo ok\n"})
	s := Subject{Root: root, Schedule: &model.Schedule{ID: "d"}, Tool: &model.Tool{Name: "d", Kind: "exec", Command: []string{"sh", "scripts/tools/deploy.sh"}}, Version: "v1"}
	before, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "scripts/tools/lib.sh"), []byte("echo evil\n"), 0o644)
	after, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	if ch := Changes(before, after); len(ch) == 0 || !strings.Contains(strings.Join(ch, " "), "scripts/tools/lib.sh") {
		t.Fatalf("changes %v", ch)
	}
}
