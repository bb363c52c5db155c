package agentctx

import "context"

// SteadySizer exports a turn's sizing to the external benchmarks: it builds the turn of in on
// p once and returns a function that sizes it again, as the turn's last step does, and one
// that encodes its request through the memo.
func SteadySizer(ctx context.Context, p *Pipeline, in Input) (size func(), encode func() error, err error) {
	t, err := p.build(ctx, &in)
	if err != nil {
		return nil, nil, err
	}
	return func() { p.size(t) }, func() error { _, err := t.req.MarshalJSON(); return err }, nil
}
