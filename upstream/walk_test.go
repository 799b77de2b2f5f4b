package upstream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/google/go-cmp/cmp"
)

// pages is a fake list operation: page i (from 0) has records[i] records and
// next cursor cursors[i] ("" for null, with has_more false).
type pages struct {
	records []int
	cursors []string
	asked   []string // the cursor of each fetch
}

func (p *pages) fetch(_ context.Context, o *upstream.ListOptions) (*upstream.Page[int], error) {
	i := len(p.asked)
	p.asked = append(p.asked, o.Cursor)
	pg := &upstream.Page[int]{Data: make([]int, p.records[min(i, len(p.records)-1)])}
	if c := p.cursors[min(i, len(p.cursors)-1)]; c != "-" {
		pg.Pagination.HasMore = true
		if c != "null" {
			pg.Pagination.NextCursor = &c
		}
	}
	return pg, nil
}

func TestPageWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		start     string
		max       int
		records   []int
		cursors   []string // "-": has_more false; "null": has_more with a null cursor
		wantAsked []string
		wantErr   bool
		wantMore  bool // after the walk
	}{
		{name: "to the end", records: []int{2}, cursors: []string{"a", "b", "-"}, wantAsked: []string{"", "a", "b"}},
		{name: "bound reached", max: 2, records: []int{2}, cursors: []string{"a", "b", "c"}, wantAsked: []string{"", "a"}, wantMore: true},
		{name: "bound not reached", max: 5, records: []int{2}, cursors: []string{"a", "-"}, wantAsked: []string{"", "a"}},
		{name: "repeating cursor", records: []int{2}, cursors: []string{"a"}, wantAsked: []string{"", "a"}, wantErr: true},
		{name: "back to the start cursor", start: "s", records: []int{2}, cursors: []string{"a", "s"}, wantAsked: []string{"s", "a"}, wantErr: true},
		{name: "an empty page goes on", records: []int{2, 0, 2}, cursors: []string{"a", "b", "-"}, wantAsked: []string{"", "a", "b"}},
		{name: "empty pages end at the bound", max: 3, records: []int{0}, cursors: []string{"a", "b", "c", "d"}, wantAsked: []string{"", "a", "b"}, wantMore: true},
		{name: "an empty page with a cursor seen before", records: []int{2, 0}, cursors: []string{"a", "a"}, wantAsked: []string{"", "a"}, wantErr: true},
		// MaxEmptyPages in a row, the tenth page's.
		{name: "a run of empty pages without a bound", records: []int{0}, cursors: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"},
			wantAsked: []string{"", "a", "b", "c", "d", "e", "f", "g", "h", "i"}, wantErr: true},
		{name: "has_more with a null cursor", records: []int{2}, cursors: []string{"null"}, wantAsked: []string{""}, wantErr: true},
		{name: "an empty last page is fine", records: []int{2, 0}, cursors: []string{"a", "-"}, wantAsked: []string{"", "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &pages{records: tc.records, cursors: tc.cursors}
			w := upstream.NewPageWalk(ops.ListBudgets, p.fetch, tc.start, tc.max)
			var err error
			for range 100 {
				var pg *upstream.Page[int]
				if pg, err = w.Next(t.Context(), 2); err != nil || pg == nil {
					break
				}
			}
			if diff := cmp.Diff(tc.wantAsked, p.asked); diff != "" {
				t.Errorf("cursors asked (-want +got):\n%s", diff)
			}
			var ue *upstream.Error
			if tc.wantErr != (err != nil) || err != nil && (!errors.Is(err, upstream.ErrBadResponse) || !errors.As(err, &ue) || ue.Op != ops.ListBudgets) {
				t.Errorf("err = %v, want an ErrBadResponse of listBudgets: %t", err, tc.wantErr)
			}
			if w.More() != tc.wantMore {
				t.Errorf("More() = %t, want %t", w.More(), tc.wantMore)
			}
			if n, _ := w.Next(t.Context(), 2); n != nil || len(p.asked) != len(tc.wantAsked) {
				t.Errorf("Next after the end fetched again")
			}
		})
	}
}
