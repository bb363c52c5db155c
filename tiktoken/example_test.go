package tiktoken_test

import (
	"fmt"

	"github.com/agentctx/agentctx/tiktoken"
)

func Example() {
	enc, err := tiktoken.New(tiktoken.CL100K)
	if err != nil {
		panic(err)
	}
	fmt.Println(enc.Name(), enc.CountTokens("tiktoken is great!"))
	// Output: cl100k_base 6
}
