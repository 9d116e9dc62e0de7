package model

import "testing"

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"schedules/ops/**", "schedules/ops/a.yaml", true},
		{"schedules/ops/**", "schedules/ops/x/y/a.yaml", true},
		{"schedules/ops/**", "schedules/ops", true},
		{"schedules/ops/**", "schedules/opsx/a.yaml", false},
		{"schedules/ops/**", "schedules/a.yaml", false},
		{"schedules/*.yaml", "schedules/a.yaml", true},
		{"schedules/*.yaml", "schedules/ops/a.yaml", false},
		{"schedules/**/deploy.yaml", "schedules/deploy.yaml", true},
		{"schedules/**/deploy.yaml", "schedules/a/b/deploy.yaml", true},
		{"**", "anything/at/all", true},
		{"my-org/*", "my-org/astra", true},
		{"my-org/*", "other/astra", false},
		{"repo:my-org/*:ref:refs/heads/main", "repo:my-org/astra:ref:refs/heads/main", true},
		{"repo:my-org/*:ref:refs/heads/main", "repo:my-org/astra:ref:refs/heads/dev", false},
		{"refs/heads/**", "refs/heads/feature/x", true},
		{"schedules/[x", "schedules/x", false},
	} {
		if got := Glob(c.pattern, c.name); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	if ValidGlob("a/[x") || !ValidGlob("schedules/**/[a-z]*.yaml") {
		t.Error("ValidGlob")
	}
}

func TestUsableIn(t *testing.T) {
	a := &Actor{Pattern: "admin", AllowedIn: []string{"schedules/ops/**", "schedules/root.yaml"}}
	for file, want := range map[string]bool{"schedules/ops/a.yaml": true, "schedules/root.yaml": true, "schedules/x.yaml": false} {
		if got := a.UsableIn(file); got != want {
			t.Errorf("UsableIn(%q) = %v", file, got)
		}
	}
	if !(&Actor{}).UsableIn("schedules/anything.yaml") {
		t.Error("an actor without allowed_in is usable anywhere")
	}
}
