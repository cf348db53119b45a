package config_test

import "fmt"

func fmtAll(v any) string { return fmt.Sprintf("%v %s %+v %#v", v, v, v, v) }
