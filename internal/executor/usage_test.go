package executor

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
)

// (Tokens: 1 below is the estimate of the two bytes of payload handed over.)

// budget50c is the budget of the attack: $0.50 a run, default tokens and
// tool calls.
var budget50c = model.TaskBudget{MaxTokens: 50_000, MaxCost: money.Dollar / 2, MaxToolCalls: 10, MaxWallClock: model.Duration(time.Minute)}

// A tool that ignores SIGTERM and prints 18,446 lines of a billion dollars
// (or tokens near the int64 limit) records its bound, twice its cap, and
// keeps what it reported as evidence: never a wrapped, negative or
// unreadable figure.
func TestUsageBeyondTheBoundsIsAnAnomaly(t *testing.T) {
	for _, c := range []struct {
		name, line, limit string
		recorded          ledger.Usage
		reported          func(ledger.Usage) bool
	}{
		{"cost", `{"cost_usd":1000000000}`, LimitCost, ledger.Usage{Tokens: 1, Cost: money.Dollar, ToolCalls: 1},
			func(u ledger.Usage) bool { return u.Cost == money.Max }},
		{"tokens", `{"tokens":9223372036854775000}`, LimitTokens, ledger.Usage{Tokens: 100_000, ToolCalls: 1},
			func(u ledger.Usage) bool { return u.Tokens == ledger.MaxCount }},
		{"tool calls", `{"tool_calls":99999999999999999999999}`, LimitToolCalls, ledger.Usage{Tokens: 1, ToolCalls: 20},
			func(u ledger.Usage) bool { return u.ToolCalls == ledger.MaxCount }},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := New(Options{KillGrace: 500 * time.Millisecond}).Run(context.Background(),
				Request{Tool: execTool("./stubborn.sh", "18446", c.line), Dir: testdir(t), Budget: budget50c})
			if res.Status != StatusFailed || res.Reason != ReasonBudgetExceeded || res.Exceeded != c.limit {
				t.Fatalf("%+v", res)
			}
			res.Usage.WallClockMS = 0
			if res.Usage != c.recorded {
				t.Errorf("recorded %+v, want %+v", res.Usage, c.recorded)
			}
			if res.Reported == nil || !c.reported(*res.Reported) {
				t.Errorf("reported %+v", res.Reported)
			}
			if !strings.Contains(res.Error, "kept as evidence and not counted") {
				t.Errorf("error %q", res.Error)
			}
			line := ledger.AppendJSON(nil, &ledger.Event{Event: ledger.RunFailed, Usage: res.Usage})
			var back ledger.Event
			if err := ledger.Unmarshal(line, &back); err != nil || back.Usage != res.Usage {
				t.Fatalf("%s reads back as %+v, %v", line, back.Usage, err)
			}
		})
	}
}

// What a tool reports after astra stopped it is ignored: the stop at the
// second line of $0.30 ($0.60, past the $0.50 cap) is what the run
// records, though the tool ignores SIGTERM and reports on until SIGKILL.
func TestUsageAfterTheStopIsIgnored(t *testing.T) {
	res := New(Options{KillGrace: 500 * time.Millisecond}).Run(context.Background(),
		Request{Tool: execTool("./stubborn.sh", "0", `{"cost_usd":0.3}`, "0.01"), Dir: testdir(t), Budget: budget50c})
	if res.Status != StatusFailed || res.Exceeded != LimitCost || res.Reported != nil {
		t.Fatalf("%+v", res)
	}
	if want := money.Dollar * 6 / 10; res.Usage.Cost != want {
		t.Fatalf("recorded %s, want %s: lines read after the stop counted", res.Usage.Cost.Dollars(), want.Dollars())
	}
}

// Tokens reported without a cost are priced: the model's rate, else the
// tool's; input and output at their rates, tokens without the split at the
// higher one. A cost the tool reports wins.
func TestPricing(t *testing.T) {
	usd := func(s string) money.USD {
		u, err := money.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	pricing := &model.Pricing{
		Models: map[string]*model.Rate{"big": {Input: usd("0.01"), Output: usd("0.03")}},
		Tools:  map[string]*model.Rate{"t": {Input: usd("0.001"), Output: usd("0.002")}},
	}
	for _, c := range []struct {
		lines string
		want  money.USD
	}{
		{`{"input_tokens":1000,"output_tokens":2000,"model":"big"}`, usd("0.07")},
		{`{"input_tokens":1000,"output_tokens":2000}`, usd("0.005")},                 // the tool's rate
		{`{"input_tokens":1000,"output_tokens":2000,"model":"other"}`, usd("0.005")}, // a model not listed: the tool's rate
		{`{"tokens":1000,"model":"big"}`, usd("0.03")},                               // no split: the higher rate
		{`{"tokens":1000,"cost_usd":0.002,"model":"big"}`, usd("0.002")},             // the tool's own cost wins
		{`{"tokens":1,"model":"big"}`, usd("0.00003")},
		{`{"tokens":1}|{"tokens":1}`, usd("0.000004")}, // rounded up per line
	} {
		g := newGuard(Request{Tool: execTool("x"), Pricing: pricing, Budget: model.TaskBudget{MaxCost: money.Dollar}}, 0)
		for _, l := range strings.Split(c.lines, "|") {
			u, ok := parseUsage([]byte(l))
			if !ok {
				t.Fatalf("%s refused", l)
			}
			g.report(u)
		}
		var res Result
		g.settle(&res, 0)
		if res.Usage.Cost != c.want {
			t.Errorf("%s: %s, want %s", c.lines, res.Usage.Cost.Dollars(), c.want.Dollars())
		}
	}
}

func TestParseUsage(t *testing.T) {
	for _, c := range []struct {
		in   string
		want usageLine
	}{
		{`{"tokens":1200,"cost_usd":0.02,"tool_calls":1}`, usageLine{tokens: 1200, cost: 20_000, toolCalls: 1, hasTokens: true, hasCost: true}},
		{`{"input_tokens":5,"output_tokens":7,"model":"m"}`, usageLine{input: 5, output: 7, model: "m"}},
		{`{"tokens":99999999999999999999}`, usageLine{tokens: ledger.MaxCount, hasTokens: true}},
		{`{"cost_usd":1e30}`, usageLine{cost: money.Max, hasCost: true}},
		{`{"cost_usd":1e400}`, usageLine{cost: money.Max, hasCost: true}},
		{`{"cost_usd":1000000000.5}`, usageLine{cost: money.Max, hasCost: true}},
		{`{"cost_usd":1e-7}`, usageLine{hasCost: true}},
		{`{"cost_usd":null,"tokens":null}`, usageLine{hasTokens: true}},
		{`{}`, usageLine{}},
	} {
		got, ok := parseUsage([]byte(c.in))
		if !ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.in, got, ok, c.want)
		}
	}
	for _, bad := range []string{`{"tokens":-1}`, `{"tokens":1.5}`, `{"tokens":1e3}`, `{"tokens":"5"}`, `{"cost_usd":-0.01}`, `{"cost_usd":"1"}`,
		`{"cost_usd":-1e400}`, `{"model":5}`, `[]`, `null`, `{"tool_calls":true}`} {
		if u, ok := parseUsage([]byte(bad)); ok {
			t.Errorf("%s accepted: %+v", bad, u)
		}
	}
}

// FuzzUsageProtocol: whatever a tool prints, what its run records is
// within its bounds, never negative, and reads back from a ledger line as
// it was written.
func FuzzUsageProtocol(f *testing.F) {
	f.Add([]byte("::astra-usage {\"cost_usd\":1000000000}\n::astra-usage {\"cost_usd\":1000000000}\n"), int64(500_000))
	f.Add([]byte("::astra-usage {\"tokens\":9223372036854775000}\n::astra-usage {\"tokens\":9223372036854775000}\n"), int64(0))
	f.Add([]byte("hello\n::astra-usage {\"input_tokens\":1000,\"output_tokens\":5,\"model\":\"big\"}\n"), int64(1))
	f.Add([]byte("::astra-usage {\"tool_calls\":3,\"cost_usd\":1e-3}\n::astra-usage {\"cost_usd\":0.2}"), int64(math.MaxInt64))
	pricing := &model.Pricing{Models: map[string]*model.Rate{"big": {Input: money.Max, Output: 1}}, Tools: map[string]*model.Rate{"t": {Input: 3, Output: 7}}}
	f.Fuzz(func(t *testing.T, out []byte, capMicro int64) {
		b := budget50c
		b.MaxCost = money.USD(capMicro).Clamp()
		if b.MaxCost < 0 {
			b.MaxCost = -b.MaxCost
		}
		g := newGuard(Request{Tool: execTool("x"), Pricing: pricing, Budget: b}, 0)
		readStdout(strings.NewReader(string(out)), &ring{n: 64}, g)
		var res Result
		g.settle(&res, time.Second)
		u, bound := res.Usage, bounds(b)
		if u.Tokens < 0 || u.Cost < 0 || u.ToolCalls < 0 || u.Tokens > bound.Tokens || u.Cost > bound.Cost || u.ToolCalls > bound.ToolCalls {
			t.Fatalf("recorded %+v, bounds %+v", u, bound)
		}
		if (res.Reported != nil) != (res.Exceeded != "" && strings.Contains(res.Error, "evidence")) {
			t.Fatalf("reported %+v, %q", res.Reported, res.Error)
		}
		for _, e := range []*ledger.Event{{Event: ledger.RunFailed, Usage: u}, {Event: ledger.BudgetWarning, Usage: deref(res.Reported)}} {
			line := ledger.AppendJSON(nil, e)
			var back ledger.Event
			if err := ledger.Unmarshal(line, &back); err != nil || back.Usage != e.Usage {
				t.Fatalf("%s reads back as %+v, %v", line, back.Usage, err)
			}
		}
	})
}

func deref(u *ledger.Usage) ledger.Usage {
	if u == nil {
		return ledger.Usage{}
	}
	return *u
}
