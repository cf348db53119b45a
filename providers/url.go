package providers

import (
	"net/url"
	"strings"
)

// DisplayURL is raw as logs and admin answers may show it: without its userinfo
// (user:password@), which is a credential. A URL that does not parse as
// scheme://authority/path loses everything between its scheme and the last '@'.
func DisplayURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		if u.User == nil {
			return raw
		}
		u.User = nil
		return u.String()
	}
	prefix, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return prefix + rest
}
