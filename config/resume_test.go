package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
)

func TestStreamResumeSetting(t *testing.T) {
	t.Parallel()
	const head = "providers:\n  simulator:\n    type: simulator\nvirtual_models:\n  - source: v\n    targets: [{model: simulator/x}]\n"
	cases := []struct {
		name, yaml string
		on         bool
		max        int
	}{
		{"absent", "", false, 0},
		{"true", "    stream_resume: true\n", true, 1},
		{"false", "    stream_resume: false\n", false, 0},
		{"block", "    stream_resume: {max_resumes: 3}\n", true, 3},
		{"block off", "    stream_resume: {enabled: false, max_resumes: 3}\n", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(writeFile(t, head+tc.yaml), envOf(nil))
			require.NoError(t, err)
			r := cfg.VirtualModels[0].StreamResume
			require.Equal(t, tc.on, r.On())
			require.Equal(t, tc.max, r.Max())
		})
	}
	bad := []struct{ name, text, want string }{
		{"not a bool or block", "    stream_resume: maybe\n", "virtual_models[0].stream_resume"},
		{"misspelt max_resumes", "    stream_resume: {max_resume: 2}\n", "virtual_models[0].stream_resume.max_resume"},
		{"zero max_resumes", "    stream_resume: {max_resumes: 0}\n", "virtual_models[0].stream_resume.max_resumes"},
		{"non-numeric max_resumes", "    stream_resume: {max_resumes: many}\n", "virtual_models[0].stream_resume.max_resumes"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(writeFile(t, head+tc.text), envOf(nil))
			require.ErrorContains(t, err, tc.want, tc.text)
		})
	}
}
