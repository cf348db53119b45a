package server

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

func TestMarshalerAdminIsProtoJSON(t *testing.T) {
	t.Parallel()
	vm := &adminpb.VirtualModel{Source: "up/gpt-4o", Strategy: "failover",
		Targets: []*adminpb.VirtualModelTarget{{Model: "backup/gpt-4o-mini", Weight: proto.Int32(1)}}, Failover: structpb.NewBoolValue(true)}
	cases := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"virtual model", &adminpb.UpsertVirtualModelResponse{VirtualModel: vm},
			`{"virtual_model":{"source":"up/gpt-4o","strategy":"failover","targets":[{"model":"backup/gpt-4o-mini","weight":1}],"failover":true}}`},
		{"breaker: enum by name, zero values left out", &adminpb.ListBreakersResponse{Breakers: []*adminpb.Breaker{{Provider: "up", State: adminpb.BreakerState_BREAKER_STATE_OPEN}}},
			`{"breakers":[{"provider":"up","state":"BREAKER_STATE_OPEN"}]}`},
		{"empty answer", &adminpb.DeleteVirtualModelResponse{}, `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jsonMarshaler{}.Marshal(tc.msg)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			want, err := protojson.Marshal(tc.msg)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), "the same JSON grpcurl prints")
		})
	}
}

func TestMarshalerDecodesAdminBodies(t *testing.T) {
	t.Parallel()
	j := jsonMarshaler{}
	t.Run("whole request", func(t *testing.T) {
		var req adminpb.UpsertVirtualModelRequest
		require.NoError(t, j.NewDecoder(bytes.NewBufferString(`{"virtual_model":{"source":"a","targets":[{"model":"up/m"}],"failover":{"max_attempts":2}}}`)).Decode(&req))
		require.Equal(t, "a", req.GetVirtualModel().GetSource())
		require.Equal(t, 2.0, req.GetVirtualModel().GetFailover().GetStructValue().GetFields()["max_attempts"].GetNumberValue())
	})
	t.Run("one message field (body: \"field\")", func(t *testing.T) {
		var req adminpb.UpsertVirtualModelRequest
		require.NoError(t, j.NewDecoder(bytes.NewBufferString(`{"source":"a","targets":[{"model":"up/m"}]}`)).Decode(&req.VirtualModel))
		require.Equal(t, "a", req.GetVirtualModel().GetSource())
	})
	t.Run("unknown field refused", func(t *testing.T) {
		var req adminpb.TripBreakerRequest
		require.Error(t, j.NewDecoder(bytes.NewBufferString(`{"provider":"up","durations":"1m"}`)).Decode(&req))
	})
	t.Run("no body is io.EOF", func(t *testing.T) {
		var req adminpb.ResetBreakerRequest
		require.ErrorIs(t, j.NewDecoder(bytes.NewBufferString(" \n")).Decode(&req), io.EOF)
	})
	t.Run("OpenAI messages keep openaijson", func(t *testing.T) {
		var req pb.ChatCompletionRequest
		require.NoError(t, j.NewDecoder(bytes.NewBufferString(`{"model":"m","messages":[],"top_k":3}`)).Decode(&req))
		out, err := j.Marshal(&req)
		require.NoError(t, err)
		require.Contains(t, string(out), `"top_k":3`, "unknown members kept")
	})
	t.Run("not a message", func(t *testing.T) {
		var s string
		require.ErrorIs(t, j.Unmarshal([]byte(`{}`), &s), errNotProto)
	})
}
