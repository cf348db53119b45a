package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/providers/openai"
)

// TestAzureAPIVersionDefaultsAgree: the api-version the README and config
// document is the one the client sends when none is configured.
func TestAzureAPIVersionDefaultsAgree(t *testing.T) {
	require.Equal(t, config.DefaultAzureAPIVersion, openai.DefaultAzureAPIVersion)
}
