package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestHelpExamples: every command has examples in --help, and every
// example names a real command with flags that parse.
func TestHelpExamples(t *testing.T) {
	a := &app{v: viper.New()}
	root := a.rootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || (sub.Parent() != root && sub.Parent().Name() == "completion") {
				continue
			}
			walk(sub)
		}
		if c == root || c.Name() == "completion" && c.Parent() == root {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no examples in --help", c.CommandPath())
			return
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "astra ") {
				continue
			}
			// Drop a comment and what is piped or chained after the command.
			for _, sep := range []string{" #", " |", " &&"} {
				if i := strings.Index(line, sep); i >= 0 {
					line = line[:i]
				}
			}
			words, err := shellWords(strings.TrimPrefix(line, "astra "))
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			cmd, rest, err := root.Find(words)
			if err != nil || cmd == root {
				t.Errorf("%s: example %q names no command", c.CommandPath(), line)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
	}
	walk(root)
}

// shellWords splits s like a POSIX shell does for plain words and single
// or double quotes, which is all the examples use.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote, started := false, byte(0), false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case in && ch == quote:
			in = false
		case in:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			in, quote, started = true, ch, true
		case ch == ' ' || ch == '\t':
			if started {
				words = append(words, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(ch)
			started = true
		}
	}
	if in {
		return nil, errors.New("unclosed quote")
	}
	if started {
		words = append(words, cur.String())
	}
	return words, nil
}

// internalNames are names of the documents astra was designed from; users
// never saw them, so user-facing text must not use them.
var internalNames = regexp.MustCompile(`(?i)\bseeds? ?0\d\d\b|\bZORA\b|Spaceduck|Chad-Core|GlobalBudgetGuard|BudgetGuard|\bthe brief\b`)

// TestNoInternalNamesInUserText: --help of every command and flag, the
// JSON Schemas, the README and the files `astra init` writes speak the
// user's language.
func TestNoInternalNamesInUserText(t *testing.T) {
	a := &app{v: viper.New()}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, text := range []string{c.Short, c.Long, c.Example} {
			if m := internalNames.FindString(text); m != "" {
				t.Errorf("%s --help says %q", c.CommandPath(), m)
			}
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if m := internalNames.FindString(f.Usage); m != "" {
				t.Errorf("%s --%s says %q", c.CommandPath(), f.Name, m)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
	files, _ := filepath.Glob("../../schema/*.json")
	files = append(files, "../../README.md")
	err := filepath.WalkDir("../scaffold/files", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := internalNames.FindString(line); m != "" {
				t.Errorf("%s:%d says %q", f, i+1, m)
			}
		}
	}
}
