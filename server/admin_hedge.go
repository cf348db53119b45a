package server

import (
	"strconv"
	"time"
)

// hedgeAfterText is a virtual model's hedge_after as the API shows it: the
// duration as Go writes it, empty when unset.
func hedgeAfterText(d *time.Duration) string {
	if d == nil {
		return ""
	}
	return d.String()
}

// hedgeAfterOf reads hedge_after sent to the API: empty is unset, otherwise a
// duration of at least 0 ("0s" is off).
func hedgeAfterOf(text string) (*time.Duration, error) {
	if text == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return nil, invalidRequest("virtual_model.hedge_after", "hedge_after must be a duration such as 3s or 500ms; got "+strconv.Quote(text))
	}
	if d < 0 {
		return nil, invalidRequest("virtual_model.hedge_after", "hedge_after must not be negative; got "+text)
	}
	return &d, nil
}
