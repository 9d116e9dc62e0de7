package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// The tool sandbox is not wired into this build yet: the CLI's tests run
// as if it worked (a script can say otherwise), so that the posture checks
// they exercise are the repository's.
func init() {
	sandboxCheck = func() error {
		if os.Getenv("TEST_NO_SANDBOX") != "" {
			return errors.New("Landlock is not available (test)")
		}
		return nil
	}
}

// scriptGitHubKey finds a script's fake GitHub in its values.
type scriptGitHubKey struct{}

// scriptGitHub is the fake GitHub a script starts with `github start`.
type scriptGitHub struct {
	tb  testing.TB // the script's test: the server ends with it
	srv *githubtest.Server
}

// setupScriptEnv gives every script what a person's machine has: a
// config directory outside the repository (where astra init puts the
// ledger key) and room for a fake GitHub.
func setupScriptEnv(env *testscript.Env) error {
	dir, err := os.MkdirTemp(filepath.Dir(env.WorkDir), "xdg-config-")
	if err != nil {
		return err
	}
	env.Setenv("XDG_CONFIG_HOME", dir)
	tb, _ := env.T().(testing.TB)
	env.Values[scriptGitHubKey{}] = &scriptGitHub{tb: tb}
	return nil
}

// github starts a fake GitHub for the script and sets its state, as the
// repository's administrators would:
//
//	github start                     GITHUB_API_URL, GITHUB_REPOSITORY=octo/widgets, GITHUB_TOKEN: a workflow's token
//	github admin                     GITHUB_TOKEN: an administrator's own token (gh auth token)
//	github bot                       GITHUB_TOKEN: the workflow's token again
//	github ruleset NAME REF RULE...  a ruleset on REF (~DEFAULT_BRANCH, refs/heads/x); RULE: deletion, non_fast_forward,
//	                                 pull_request[:code_owners][:dismiss_stale]
//	github environment NAME all|protected|custom [BRANCH...]
//	github secret NAME               a repository secret
//	github workflow-permissions read|write
//	github merge N LOGIN             LOGIN merges pull request N (approves it)
//	github review N LOGIN EVENT      LOGIN reviews pull request N: APPROVE, REQUEST_CHANGES or COMMENT (with a body)
//	github pr N                      prints pull request N's state ("open", "closed" or "merged"), then its comments
//	github fail METHOD PATH STATUS   the next matching request fails
//	github skew DURATION             its answers' Date is DURATION from now (-8760h: a runner's clock looks a year ahead)
func scriptGitHubCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: github start|admin|bot|ruleset|environment|secret|workflow-permissions|merge|review|pr|fail|skew ...")
	}
	g := ts.Value(scriptGitHubKey{}).(*scriptGitHub)
	if args[0] == "start" {
		g.srv = githubtest.New(g.tb, githubtest.Config{Repository: "octo/widgets"})
		ts.Setenv("GITHUB_API_URL", g.srv.URL)
		ts.Setenv("GITHUB_REPOSITORY", g.srv.Repository())
		ts.Setenv("GITHUB_TOKEN", g.srv.BotToken)
		return
	}
	if g.srv == nil {
		ts.Fatalf("github start first")
	}
	srv := g.srv
	switch args[0] {
	case "admin":
		const token = "gho_adaAdministratorToken000000000001"
		srv.AddUser(token, "ada")
		srv.SetAdmin("ada", true)
		ts.Setenv("GITHUB_TOKEN", token)
	case "bot":
		ts.Setenv("GITHUB_TOKEN", srv.BotToken)
	case "ruleset":
		if len(args) < 4 {
			ts.Fatalf("usage: github ruleset NAME REF RULE...")
		}
		r := githubtest.Ruleset{Name: args[1], Include: []string{args[2]}}
		for _, spec := range args[3:] {
			typ, opts, _ := strings.Cut(spec, ":")
			rule := githubtest.Rule{Type: typ}
			if typ == "pull_request" {
				rule.PullRequest = &github.PullRequestRuleParameters{RequiredApprovingReviewCount: 1,
					RequireCodeOwnerReview: strings.Contains(opts, "code_owners"), DismissStaleReviewsOnPush: strings.Contains(opts, "dismiss_stale")}
			}
			r.Rules = append(r.Rules, rule)
		}
		srv.AddRuleset(r)
	case "environment":
		if len(args) < 3 {
			ts.Fatalf("usage: github environment NAME all|protected|custom [BRANCH...]")
		}
		e := githubtest.Environment{Name: args[1], Branches: args[2]}
		for _, b := range args[3:] {
			e.Policies = append(e.Policies, githubtest.DeploymentPolicy{Name: b})
		}
		srv.SetEnvironment(e)
	case "secret":
		srv.SetSecret(args[1])
	case "workflow-permissions":
		srv.SetWorkflowPermissions(args[1], false)
	case "merge":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		srv.Merge(g.tb, n, personToken(srv, args[2]))
	case "review":
		if len(args) != 4 {
			ts.Fatalf("usage: github review N LOGIN APPROVE|REQUEST_CHANGES|COMMENT")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		body := ""
		if args[3] != "APPROVE" {
			body = args[3] + " by " + args[2] // GitHub wants a body for these
		}
		srv.Review(g.tb, n, personToken(srv, args[2]), args[3], body, "")
	case "pr":
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		pr, _, err := srv.Client(srv.BotToken).PullRequests.Get(context.Background(), "octo", "widgets", n)
		ts.Check(err)
		state := pr.GetState()
		if pr.GetMerged() {
			state = "merged"
		}
		fmt.Fprintf(ts.Stdout(), "%s\n", state)
		comments, _, err := srv.Client(srv.BotToken).Issues.ListComments(context.Background(), "octo", "widgets", n, nil)
		ts.Check(err)
		for _, c := range comments {
			fmt.Fprintf(ts.Stdout(), "comment by %s: %s\n", c.GetUser().GetLogin(), c.GetBody())
		}
	case "skew":
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		srv.SkewDate(d)
	case "fail":
		status, err := strconv.Atoi(args[3])
		ts.Check(err)
		srv.FailNext(args[1], args[2], status, nil)
	default:
		ts.Fatalf("github: unknown %q", args[0])
	}
}

// personToken is login's own token, the same for every command that acts
// as login.
func personToken(srv *githubtest.Server, login string) string {
	token := "gho_" + login + "Token0000000000000000000001"
	srv.AddUser(token, login)
	return token
}
