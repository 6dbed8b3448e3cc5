package wick_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	wick "github.com/wick-agent/wick/sdk/go"
)

// A suite on this machine, in plaintext: WICK_ADDR is its gRPC API
// address (wick prints it as "gRPC API"), WICK_TOKEN a bearer token.
func Example() {
	ctx := context.Background()
	c, err := wick.New(os.Getenv("WICK_ADDR"), wick.WithToken(os.Getenv("WICK_TOKEN")), wick.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.Invoke(ctx, "default", wick.Prompt("Say hello."))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.GetContent())
	// Output: Hello from Wick.
}

func connect() *wick.Client {
	c, err := wick.New(os.Getenv("WICK_ADDR"), wick.WithToken(os.Getenv("WICK_TOKEN")), wick.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleClient_Stream() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	var answer strings.Builder
	for ev, err := range c.Stream(ctx, "default", wick.Prompt("Say hello.")) {
		if err != nil {
			log.Fatal(err) // a gRPC status error: status.Code(err)
		}
		answer.WriteString(wick.Delta(ev))
		if p := ev.GetPayload(); p.GetDone() != nil || p.GetError() != nil {
			fmt.Println(ev.GetEvent())
		}
	}
	fmt.Println(answer.String())
	// Output:
	// done
	// Hello from Wick.
}

func ExampleClient_CreateAgent() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	model, _ := structpb.NewValue("script:sdk")
	a, err := c.CreateAgent(ctx, &wick.Agent{AgentId: "greeter", Name: "Greeter", Model: model})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteAgent(ctx, a.GetAgentId())
	got, err := c.GetAgent(ctx, "greeter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.GetAgentId(), got.GetName())
	// Output: greeter Greeter
}

func ExampleClient_GetThread() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	res, err := c.Invoke(ctx, "default", wick.Prompt("Say hello."))
	if err != nil {
		log.Fatal(err)
	}
	// The next message continues the same thread.
	if _, err := c.Invoke(ctx, "default", wick.Prompt("Again."), wick.OnThread(res.GetThreadId())); err != nil {
		log.Fatal(err)
	}
	th, err := c.GetThread(ctx, res.GetThreadId())
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range th.GetMessages() {
		fmt.Printf("%s: %s\n", m.GetRole(), m.GetContent())
	}
	// Output:
	// user: Say hello.
	// assistant: Hello from Wick.
	// user: Again.
	// assistant: Hello again.
}

func ExampleClient_Upload() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	if _, err := c.Upload(ctx, "default", "/workspace/hello.txt", strings.NewReader("hello, file\n")); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Download(ctx, "default", "/workspace/hello.txt", os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output: hello, file
}

// An interactive agent waits for each tool call to be approved.
func ExampleClient_Resume() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	model, _ := structpb.NewValue("script:approve")
	if _, err := c.CreateAgent(ctx, &wick.Agent{AgentId: "careful", Model: model, Approval: "interactive", Backend: &wick.BackendConfig{Type: "local"}}); err != nil {
		log.Fatal(err)
	}
	defer c.DeleteAgent(ctx, "careful")
	var answer strings.Builder
	for ev, err := range c.Stream(ctx, "careful", wick.Prompt("Write the file.")) {
		if err != nil {
			log.Fatal(err)
		}
		answer.WriteString(wick.Delta(ev))
		for _, call := range wick.PendingCalls(ev) {
			fmt.Println("approving", call.GetName(), call.GetArgs().GetFields()["path"].GetStringValue())
			if _, err := c.Resume(ctx, ev.GetRunId(), wick.Approve(call.GetId())); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Println(answer.String())
	content, err := c.ReadFile(ctx, "careful", "/workspace/approved.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(content)
	// Output:
	// approving write_file /workspace/approved.txt
	// Written.
	// approved
}
