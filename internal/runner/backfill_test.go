package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

func TestBackfillSlots(t *testing.T) {
	spec, err := cron.Parse("0 * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	sc := &model.Schedule{Name: "hourly", Spec: spec}
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	now := at("2026-11-23T10:30:00Z")

	slots, err := BackfillSlots(sc, Backfill{From: at("2026-11-23T07:00:00Z"), To: at("2026-11-23T12:00:00Z"), Max: 10}, now)
	if err != nil || len(slots) != 4 || !slots[0].Equal(at("2026-11-23T07:00:00Z")) || !slots[3].Equal(at("2026-11-23T10:00:00Z")) {
		t.Errorf("slots = %v, %v; want 07:00 to 10:00 (both ends in, none after now)", slots, err)
	}
	for _, c := range []struct {
		sc   *model.Schedule
		b    Backfill
		want string
	}{
		{sc, Backfill{From: at("2026-11-23T00:00:00Z"), To: at("2026-11-23T10:00:00Z"), Max: 10}, "more than 10 slots"},
		{sc, Backfill{From: at("2026-11-23T07:01:00Z"), To: at("2026-11-23T07:59:00Z"), Max: 10}, "no slot from"},
		{sc, Backfill{From: at("2026-11-24T00:00:00Z"), To: at("2026-11-25T00:00:00Z"), Max: 10}, "is after now"},
		{sc, Backfill{From: at("2026-11-23T08:00:00Z"), To: at("2026-11-23T07:00:00Z"), Max: 10}, "is before --from"},
		{sc, Backfill{From: at("2026-11-23T07:00:00Z"), To: at("2026-11-23T08:00:00Z"), Max: model.MaxBackfillSlots + 1}, "--max 101"},
		{&model.Schedule{Name: "event"}, Backfill{From: at("2026-11-23T07:00:00Z"), To: at("2026-11-23T08:00:00Z"), Max: 10}, "no time trigger"},
	} {
		_, err := BackfillSlots(c.sc, c.b, now)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errkind.ErrUsage) {
			t.Errorf("BackfillSlots(%+v) = %v, want a usage error with %q", c.b, err, c.want)
		}
	}
}
