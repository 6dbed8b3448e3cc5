package protoutf8_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
	"github.com/wick-agent/wick/services/gateway/internal/protoutf8"
)

const bad = "a\xff\xfe"

func TestCheckNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		msg   proto.Message
		field string // "" for a valid message
	}{
		{"valid", &agentv1.DownloadFileRequest{AgentId: "default", Path: "/workspace/é"}, ""},
		{"NUL is UTF-8", &agentv1.DownloadFileRequest{Path: "/workspace/a\x00"}, ""},
		{"top level", &agentv1.DownloadFileRequest{AgentId: "default", Path: "/workspace/" + bad}, "path"},
		{"oneof message", &agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{Path: bad}}}, "header.path"},
		{"list", &agentv1.InvokeRequest{Messages: []*agentv1.Message{{Content: "ok"}, {Content: bad}}}, "messages[1].content"},
		{"map value", &agentv1.AgentState{Files: map[string]string{"/workspace/a": bad}}, `files["/workspace/a"]`},
		{"map key", &agentv1.AgentState{Files: map[string]string{bad: "x"}}, "files (a key)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := protoutf8.Check(tc.msg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || st.Message() != tc.field+": not valid UTF-8" {
				t.Fatalf("Check = %v, want InvalidArgument naming %s", err, tc.field)
			}
			// What Check refuses is exactly what the encoder would refuse.
			if _, err := proto.Marshal(tc.msg); err == nil {
				t.Fatalf("proto.Marshal accepted what Check refused")
			}
		})
	}
}

// recorder is an agent service that records what reached it.
type recorder struct {
	agentv1.UnimplementedAgentServiceServer
	got chan string
}

func (r *recorder) GetAgent(_ context.Context, req *agentv1.GetAgentRequest) (*agentv1.GetAgentResponse, error) {
	r.got <- req.GetAgentId()
	return &agentv1.GetAgentResponse{}, nil
}

func (r *recorder) UploadFile(stream agentv1.AgentService_UploadFileServer) error {
	for {
		m, err := stream.Recv()
		if err != nil {
			return status.Error(codes.InvalidArgument, "upload ended without a header")
		}
		r.got <- m.GetHeader().GetPath()
	}
}

// Over a real connection, a refused message never reaches the service,
// unary or streamed, and a stream's status after the refusal is the refusal.
func TestConnRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rec := &recorder{got: make(chan string, 4)}
	agentv1.RegisterAgentServiceServer(srv, rec)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := agentv1.NewAgentServiceClient(protoutf8.Conn(cc))

	if _, err := client.GetAgent(t.Context(), &agentv1.GetAgentRequest{AgentId: bad}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("GetAgent = %v, want InvalidArgument", err)
	}
	if _, err := client.GetAgent(t.Context(), &agentv1.GetAgentRequest{AgentId: "ok"}); err != nil {
		t.Fatalf("valid GetAgent: %v", err)
	}
	if got := <-rec.got; got != "ok" {
		t.Fatalf("the service received %q first, want only the valid call", got)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := client.UploadFile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	header := &agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{Path: bad}}}
	if err := stream.Send(header); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Send = %v, want InvalidArgument", err)
	}
	_, err = stream.CloseAndRecv()
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "header.path: not valid UTF-8" {
		t.Fatalf("CloseAndRecv = %v, want the refusal", err)
	}
}
