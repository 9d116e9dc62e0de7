package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/state"
)

var gen = time.Date(2026, 11, 22, 18, 30, 0, 0, time.UTC)

func render(t *testing.T, d Data) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLEmptyMonth(t *testing.T) {
	page := render(t, Data{Generated: gen, Month: "2026-11"})
	for _, want := range []string{
		"<title>astra · November 2026</title>",
		"No schedules yet.", "No approvals waiting.", "No dead letters.", "Nothing scheduled.",
		"no monthly limit", "no daily limit",
		`id="month-usd" data-usd="0.000000">$0.00<`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("empty dashboard lacks %q", want)
		}
	}
	if strings.Contains(page, `id="paused"`) || strings.Contains(page, `id="day-limit"`) {
		t.Error("empty dashboard shows a pause banner or a limit line")
	}
}

// The header says when run-due last recorded a tick; one older than an
// idle repository records them raises a banner.
func TestHTMLLastTick(t *testing.T) {
	if page := render(t, Data{Generated: gen, Month: "2026-11"}); !strings.Contains(page, "no tick recorded yet") || strings.Contains(page, `id="tick-stale"`) {
		t.Error("a ledger without ticks")
	}
	tick := &state.Tick{At: gen.Add(-12 * time.Minute), Status: "ok"}
	page := render(t, Data{Generated: gen, Month: "2026-11", LastTick: tick, LastTickAgo: "12 minutes ago"})
	if !strings.Contains(page, `last tick <time datetime="2026-11-22T18:18:00Z">12 minutes ago</time> (ok)`) || strings.Contains(page, `id="tick-stale"`) {
		t.Error("the last tick is not shown")
	}
	page = render(t, Data{Generated: gen, Month: "2026-11", LastTick: tick, LastTickAgo: "3 hours ago", TickStale: true})
	if !strings.Contains(page, "The last tick was recorded 3 hours ago: is the cron workflow running?") {
		t.Error("no banner for a stale tick")
	}
}

// Names, errors and repository come from YAML and tool output: they are
// text, never markup, and links only go where the ledger says.
func TestHTMLEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>`
	d := Data{
		Generated: gen, Month: "2026-11", Repository: `acme/"x"`, Paused: "day " + evil,
		Schedules:   []ScheduleStats{{ID: "s1", Name: evil, Runs: 2}},
		Pending:     []Pending{{ScheduleID: "s1", Name: evil, PR: 7, URL: "javascript:alert(1)", RequestedAt: gen, ExpiresAt: gen.Add(time.Hour)}},
		DeadLetters: []DeadLetter{{Key: "s1@x", Name: "n", Error: evil, Attempts: 3, At: gen}},
	}
	page := render(t, d)
	if n := strings.Count(page, "<script>"); n != 1 { // the page's own sorting script
		t.Errorf("found %d <script> tags, want 1: input reached the page as markup", n)
	}
	if strings.Contains(page, `href="javascript:`) {
		t.Error("a javascript: URL became a link")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("escaped name not shown")
	}
}

func TestHTMLFigures(t *testing.T) {
	d := Data{
		Generated: gen, Month: "2026-11", Repository: "acme/agents", ServerURL: "https://github.com",
		DayLimitUSD: 1, MonthLimitUSD: 10, MonthUSD: 8.5, Paused: "day since 2026-11-22T12:00:00Z (pause-all)",
		Spend: []DaySpend{{Day: "2026-11-01", USD: 0.5, Runs: 2}, {Day: "2026-11-02", USD: 1.25, Runs: 3}, {Day: "2026-11-03"}},
		Schedules: []ScheduleStats{
			{ID: "a", Name: "alpha", Runs: 4, Failures: 1, LastStatus: "failed", LastRun: gen.Add(-90 * time.Minute), Next: gen.Add(3 * time.Hour)},
			{ID: "b", Name: "beta", Next: gen.Add(time.Hour)},
			{ID: "c", Name: "gamma"},
		},
		Pending: []Pending{
			{ScheduleID: "a", Name: "alpha", PR: 12, URL: "https://github.com/acme/agents/pull/12", RequestedAt: gen.Add(-26 * time.Hour), ExpiresAt: gen.Add(-2 * time.Hour)},
		},
	}
	page := render(t, d)
	for _, want := range []string{
		`id="paused" role="alert">Paused: day since 2026-11-22T12:00:00Z (pause-all)`,
		`class="v warn" id="month-usd"`, // 85% of the month: past the 80% alert
		`style="width:85.0%"`,
		`data-schedule="a" data-runs="4" data-failures="1"`,
		`<span class="bad">failed</span> <span class="muted">1h 30m ago</span>`,
		`<a href="https://github.com/acme/agents/pull/12">#12</a>`,
		`<td>1d 2h ago</td><td class="bad">expired</td>`,
		`on event / off`,
		`id="day-limit"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
	bars := regexp.MustCompile(`<rect class="bar( over)?"[^>]*data-day="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(bars) != 3 {
		t.Fatalf("%d bars, want one per day so far", len(bars))
	}
	if bars[0][1] != "" || bars[1][1] != " over" || bars[2][1] != "" {
		t.Errorf("only the day over the $1 limit is marked: %q", bars)
	}
	// Next runs: soonest first, event schedules left out.
	next := page[strings.Index(page, `id="next"`):]
	if b, a := strings.Index(next, `data-schedule="b"`), strings.Index(next, `data-schedule="a"`); b < 0 || a < 0 || b > a || strings.Contains(next, `data-schedule="c"`) {
		t.Errorf("next runs not ordered soonest first without event schedules:\n%s", next)
	}
}

func TestChartScale(t *testing.T) {
	c := newChart(Data{DayLimitUSD: 1.5, Spend: []DaySpend{{Day: "2026-11-01", USD: 3}, {Day: "2026-11-02", USD: 1.5}}}, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	// $3.30 rounds up to a $5 axis: the $3 bar fills 60% of the plot, the
	// limit line sits at 30%.
	plot := c.Bottom - 14
	if got := c.Bars[0].H / plot; got < 0.599 || got > 0.601 {
		t.Errorf("bar height %.3f of the plot, want 0.6", got)
	}
	if got := (c.Bottom - c.LimitY) / plot; got < 0.299 || got > 0.301 {
		t.Errorf("limit line at %.3f of the plot, want 0.3", got)
	}
	if c.YTicks[4].Label != "$5.00" {
		t.Errorf("top tick %q, want $5.00", c.YTicks[4].Label)
	}
	if last := c.XTicks[len(c.XTicks)-1].Label; last != "30" {
		t.Errorf("November's axis ends at %s", last)
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.03: 0.05, 0.1: 0.1, 0.11: 0.2, 1.65: 2, 3.3: 5, 7: 10, 42: 50} {
		if got := niceCeil(in); got < want*0.9999 || got > want*1.0001 {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestSpan(t *testing.T) {
	for in, want := range map[time.Duration]string{
		30 * time.Second:               "1m",
		90 * time.Minute:               "1h 30m",
		49*time.Hour + 10*time.Minute:  "2d 1h",
		-5 * time.Minute:               "just now",
		23*time.Hour + 59*time.Minute:  "23h 59m",
		24*time.Hour + 30*time.Second:  "1d 0h",
		100*24*time.Hour + time.Minute: "100d 0h",
	} {
		got := ago(in)
		if in >= 0 {
			got = strings.TrimSuffix(got, " ago")
		}
		if got != want {
			t.Errorf("ago(%v) = %q, want %q", in, got, want)
		}
	}
}
