package usage

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// dimensions are the group-by values of one row.
var dimensions = map[string]func(*aggRow) string{
	ByKey:          func(r *aggRow) string { return r.key },
	ByModel:        func(r *aggRow) string { return r.model },
	ByProvider:     func(r *aggRow) string { return r.provider },
	ByStatus:       func(r *aggRow) string { return strconv.Itoa(r.status) },
	ByVirtualModel: func(r *aggRow) string { return r.virtualModel },
	ByEndpoint:     func(r *aggRow) string { return r.endpoint },
	ByTarget: func(r *aggRow) string {
		if r.provider == "" {
			return ""
		}
		return r.provider + "/" + r.targetModel
	},
}

type aggRow struct {
	ts                                                        int64
	key, model, provider, targetModel, virtualModel, endpoint string
	status                                                    int
	errorCode                                                 string
	tokens                                                    Tokens
	cost                                                      float64
	priced                                                    bool
	latencyMS, ttftMS                                         float64
	hasTTFT                                                   bool
}

type aggGroup struct {
	Group
	latencies, ttfts []float64
}

// aggregator folds the rows of one Query into its groups; percentiles are exact
// (nearest rank over the group's values).
type aggregator struct {
	q      Query
	groups map[string]*aggGroup
	order  []string
}

func newAggregator(q Query) *aggregator { return &aggregator{q: q, groups: map[string]*aggGroup{}} }

func bucketStart(ts int64, bucket string) time.Time {
	t := time.UnixMicro(ts).UTC()
	switch bucket {
	case BucketHour:
		return t.Truncate(time.Hour)
	case BucketDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

func (a *aggregator) add(r *aggRow) {
	var sb strings.Builder
	start := bucketStart(r.ts, a.q.Bucket)
	sb.WriteString(strconv.FormatInt(start.Unix(), 10))
	for _, d := range a.q.GroupBy {
		sb.WriteByte(0)
		sb.WriteString(dimensions[d](r))
	}
	id := sb.String()
	g, ok := a.groups[id]
	if !ok {
		g = &aggGroup{Group: Group{Key: map[string]string{}, Start: start}}
		for _, d := range a.q.GroupBy {
			g.Key[d] = dimensions[d](r)
		}
		a.groups[id] = g
		a.order = append(a.order, id)
	}
	g.Requests++
	if r.status >= 400 || r.errorCode != "" {
		g.Errors++
	}
	g.Tokens.Prompt += r.tokens.Prompt
	g.Tokens.Completion += r.tokens.Completion
	g.Tokens.Cached += r.tokens.Cached
	g.Tokens.CacheWrite += r.tokens.CacheWrite
	g.Tokens.Reasoning += r.tokens.Reasoning
	g.Tokens.Estimated = g.Tokens.Estimated || r.tokens.Estimated
	if r.priced {
		g.CostUSD += r.cost
	} else if r.provider != "" { // a call refused before any upstream was billed nothing
		g.Unpriced++
	}
	g.latencies = append(g.latencies, r.latencyMS)
	if r.hasTTFT {
		g.ttfts = append(g.ttfts, r.ttftMS)
	}
}

func percentile(sorted []float64, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.999999) - 1 // nearest rank
	i = min(max(i, 0), len(sorted)-1)
	return time.Duration(sorted[i] * float64(time.Millisecond))
}

// groups are ordered by bucket, then by the group's values.
func (a *aggregator) result() []Group {
	out := make([]Group, 0, len(a.groups))
	slices.Sort(a.order)
	for _, id := range a.order {
		g := a.groups[id]
		slices.Sort(g.latencies)
		slices.Sort(g.ttfts)
		g.LatencyP50, g.LatencyP95 = percentile(g.latencies, 0.5), percentile(g.latencies, 0.95)
		g.TTFTP50, g.TTFTP95 = percentile(g.ttfts, 0.5), percentile(g.ttfts, 0.95)
		out = append(out, g.Group)
	}
	slices.SortStableFunc(out, func(x, y Group) int { return x.Start.Compare(y.Start) })
	return out
}
