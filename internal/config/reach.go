package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/codeowners"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// validateToolReach refuses configurations that would let a tool change
// what decides what runs, or that tools cannot be handed:
//
//   - writes: globs that can match .github/ (workflows), a CODEOWNERS file,
//     a repository file some tool runs, or a path CODEOWNERS gives owners:
//     astra commits a tool's declared writes with its outcome, past the
//     review those paths need (astra's own files are checkWrites');
//   - writes: of a tool a schedule runs at tier 0, whose sandbox cannot
//     write the repository;
//   - payloads over model.MaxPayloadBytes.
func validateToolReach(root string, cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	bound := boundByTools(root, p)
	owners, ownersErr := readCodeowners(root)
	if ownersErr != nil {
		diags.Warnf(diag.Pos{}, "", "CODEOWNERS could not be read, so writes: patterns are not checked against it: %v", ownersErr)
	}
	const hint = "narrow the pattern to paths no one reviews as code, such as reports/*.md"
	for _, name := range toolNames(p) {
		t := p.Tools[name]
		protected, why := bound.except(name)
		for _, g := range t.Writes {
			if checkWrites(g) != "" {
				continue // reported already
			}
			if path, i, ok := codeowners.Overlap(g, protected...); ok {
				diags.Errorf(t.Meta.At("writes"), hint, "writes pattern %q can write %s, which %s: a tool may not change it", g, path, why[i])
				continue
			}
			if owners == nil {
				continue
			}
			if path, rule, ok := owners.Owned(g); ok {
				diags.Errorf(t.Meta.At("writes"), hint, "writes pattern %q can write %s, which %s:%d gives owners (%s %s): astra would commit a tool's change to it without their review",
					g, path, owners.Path, rule.Line, rule.Pattern, strings.Join(rule.Owners, " "))
			}
		}
	}
	for _, s := range cfg.Schedules {
		if t := p.Tools[s.TargetTool]; t != nil && len(t.Writes) > 0 && s.SafetyTier == model.TierReadOnly {
			diags.Errorf(s.Meta.At("target_tool"), "run it at safety_tier: local_write, or give the tool tier: local_write",
				"schedule %q runs tool %q, which declares writes:, at tier 0 (read_only): a read-only tool cannot write the repository", s.Name, t.Name)
		}
		if b, err := json.Marshal(s.Payload); err == nil && len(b) > model.MaxPayloadBytes {
			diags.Errorf(s.Meta.At("payload"), limitHint, "the payload is %d bytes of JSON, over the limit of %d", len(b), model.MaxPayloadBytes)
		}
	}
}

// toolBound is what each tool runs or loads.
type toolBound struct {
	names       []string
	files, dirs [][]string
}

func boundByTools(root string, p *model.Policies) *toolBound {
	b := &toolBound{names: toolNames(p)}
	for _, name := range b.names {
		files, dirs, _ := approval.ToolFiles(root, p.Tools[name])
		b.files, b.dirs = append(b.files, files), append(b.dirs, dirs)
	}
	return b
}

// except is what tool self's writes may not reach, as CODEOWNERS
// patterns, and why: workflows, CODEOWNERS, every other tool's files and
// directories, and self's own files (what self declares it writes in its
// own directory is its output).
func (b *toolBound) except(self string) (protected, why []string) {
	protected = []string{"/.github/", "/CODEOWNERS", "/docs/CODEOWNERS"}
	why = []string{"holds the workflows", "decides who reviews what", "decides who reviews what"}
	for i, name := range b.names {
		for _, f := range b.files[i] {
			protected, why = append(protected, "/"+f), append(why, "tool "+name+" runs or loads")
		}
		if name == self {
			continue
		}
		for _, d := range b.dirs[i] {
			protected, why = append(protected, "/"+d+"/"), append(why, "holds what tool "+name+" runs or loads")
		}
	}
	return protected, why
}

// readCodeowners reads the CODEOWNERS file GitHub uses: the first of
// codeowners.Files there is. Nil when there is none.
func readCodeowners(root string) (*codeowners.File, error) {
	for _, f := range codeowners.Files {
		b, err := repofs.ReadFile(root, f, model.MaxFileBytes)
		switch {
		case err == nil:
			return codeowners.Parse(f, b), nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	return nil, nil
}
