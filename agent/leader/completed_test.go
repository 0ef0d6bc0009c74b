package leader

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
)

// Options.Completed hears of each transfer that succeeded, with its direction and result, and of
// none that failed: the summary line counts what was done.
func TestCompletedHearsSuccessesOnly(t *testing.T) {
	type heard struct {
		upload bool
		oid    string
		res    agent.Result
	}
	var got []heard
	open := New(Options{Log: zerolog.Nop(), NoShare: true, Completed: func(upload bool, obj agent.Object, res agent.Result) {
		got = append(got, heard{upload, obj.Oid, res})
	}}, func(agent.Init, client.Coordinator) Client { return &barrierClient{n: 1, all: make(chan struct{})} })
	tr, err := open(context.Background(), agent.Init{Operation: "upload"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Upload(context.Background(), agent.Object{Oid: "a", Size: 5}, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Download(context.Background(), agent.Object{Oid: "b", Size: 7}, func(int64) {}); err == nil {
		t.Fatal("the client's download succeeded; it is made to fail")
	}
	want := heard{true, "a", agent.Result{Mode: agent.ModeEmbedded, NewBytes: 5}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("Completed heard %+v, want only %+v", got, want)
	}
}
