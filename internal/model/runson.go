package model

import (
	"errors"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// MaxRunnerLabels caps the labels of one runs_on.
const MaxRunnerLabels = 10

// LabelPattern is what a runner label may be: a plain name that a workflow
// can use as it is.
const LabelPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`

var labelRe = regexp.MustCompile(LabelPattern)

// ValidLabel reports whether l is a runner label astra accepts.
func ValidLabel(l string) bool { return labelRe.MatchString(l) }

// Labels are GitHub Actions runner labels (runs_on): a fan-out job runs on a
// runner that has every one of them. YAML takes one label or a list.
type Labels []string

func (l *Labels) UnmarshalYAML(n *yaml.Node) error {
	v, err := oneOrList(n, MaxRunnerLabels, "runs_on has %d labels; at most %d",
		"runs_on: each runner label must be a single value", "runs_on must be a runner label or a list of labels")
	if err == nil {
		*l = v
	}
	return err
}

// oneOrList decodes a scalar or a sequence of at most max scalars (null:
// none), with the messages of what it holds: tooMany (given the count and
// max), a bad entry, neither.
func oneOrList(n *yaml.Node, max int, tooMany, badEntry, badKind string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		if len(n.Content) > max {
			return nil, fmt.Errorf(tooMany, len(n.Content), max)
		}
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
				return nil, errors.New(badEntry)
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, errors.New(badKind)
}

// RunsOn is where a fan-out job of s runs: the schedule's runs_on, else its
// tool's, else def (astra plan --runs-on).
func (c *Config) RunsOn(s *Schedule, def Labels) Labels {
	if len(s.RunsOn) > 0 {
		return s.RunsOn
	}
	if t := c.Policies.Tools[s.TargetTool]; t != nil && len(t.RunsOn) > 0 {
		return t.RunsOn
	}
	return def
}
