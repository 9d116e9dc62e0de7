package approval

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/model"
)

// actionRepo is a repository with a deploy script, and the subject of a
// deploy that runs it.
func actionRepo(t *testing.T) (string, Subject) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scripts/tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string]string{"scripts/tools/deploy.sh": "echo deploy\n", "scripts/tools/undo.sh": "echo undo\n"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, Subject{
		Root:       root,
		Schedule:   &model.Schedule{ID: "deploy", Actor: "astra", Autonomy: model.L3ExecuteSilent, Payload: map[string]any{"env": "prod"}},
		Tool:       &model.Tool{Kind: model.KindExec, Command: []string{"sh", "./scripts/tools/deploy.sh", "--fast"}, Rollback: []string{"scripts/tools/undo.sh"}, Tier: model.TierExternal},
		Actor:      &model.Actor{Pattern: "astra", Scopes: []string{"*"}},
		Definition: "sha256:def",
		Version:    "v1.2.3",
	}
}

func compute(t *testing.T, s Subject) Action {
	t.Helper()
	a, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The files the tool runs are bound by git's blob id, computed from the
// worktree file as `git hash-object` does; program names and flags are not
// repository files.
func TestActionFiles(t *testing.T) {
	root, s := actionRepo(t)
	a := compute(t, s)
	if len(a.Files) != 2 {
		t.Fatalf("files: %v", a.Files)
	}
	if git, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command(git, "hash-object", filepath.Join(root, "scripts/tools/deploy.sh")).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Files["scripts/tools/deploy.sh"]; got != strings.TrimSpace(string(out)) {
			t.Fatalf("blob %s, git says %s", got, out)
		}
	}
	if BlobID([]byte("echo deploy\n")) != a.Files["scripts/tools/deploy.sh"] {
		t.Fatal("BlobID differs from the file's blob id")
	}
}

// Each change names its component, and a file's change names the file and
// both blob ids.
func TestActionChanges(t *testing.T) {
	_, s := actionRepo(t)
	before := compute(t, s)
	if again := compute(t, s); again.Hash != before.Hash || Changes(before, again) != nil {
		t.Fatal("the same subject gives another action")
	}
	for _, c := range []struct {
		name string
		edit func(s *Subject)
		want string
	}{
		{"command", func(s *Subject) { s.Tool.Command = []string{"sh", "-c", "curl evil"} }, "the tool's entry in policies changed"},
		{"script", func(s *Subject) {
			if err := os.WriteFile(filepath.Join(s.Root, "scripts/tools/deploy.sh"), []byte("curl evil\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "scripts/tools/deploy.sh changed (blob 28b3ac1→"},
		{"payload", func(s *Subject) { s.Schedule.Payload = map[string]any{"env": "staging"} }, "the payload or event changed"},
		{"event", func(s *Subject) { s.Event = json.RawMessage(`{"ref":"x"}`) }, "the payload or event changed"},
		{"scopes", func(s *Subject) { s.Actor.Scopes = []string{"deploy.*"} }, "the actor, its scopes or its autonomy changed"},
		{"definition", func(s *Subject) { s.Definition = "sha256:other" }, "the schedule's definition changed"},
		{"astra", func(s *Subject) { s.Version = "v1.2.4" }, "astra changed (v1.2.3→v1.2.4)"},
		{"rollback", func(s *Subject) { s.Rollback = true }, "the tool's entry in policies changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, s := actionRepo(t)
			before := compute(t, s)
			c.edit(&s)
			after := compute(t, s)
			got := strings.Join(Changes(before, after), "; ")
			if after.Hash == before.Hash || !strings.Contains(got, c.want) {
				t.Fatalf("changes: %q, want %q", got, c.want)
			}
		})
	}
	if got := Changes(Action{Hash: "sha256:old"}, before); len(got) != 1 || !strings.Contains(got[0], "older astra") {
		t.Fatalf("an approval without components: %v", got)
	}
}

// A tool file that is a symlink out of the repository cannot be bound, so
// it cannot be approved.
func TestActionRefusesLinkOut(t *testing.T) {
	root, s := actionRepo(t)
	outside := filepath.Join(t.TempDir(), "payload.sh")
	if err := os.WriteFile(outside, []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "scripts/tools/deploy.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "scripts/tools/deploy.sh")); err != nil {
		t.Fatal(err)
	}
	if _, err := Compute(s); err == nil || !strings.Contains(err.Error(), "scripts/tools/deploy.sh") || strings.Contains(err.Error(), outside) {
		t.Fatalf("a link out was bound: %v", err)
	}
}
