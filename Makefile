# Switchyard developer commands. `make run` serves, `make test` runs everything.
.PHONY: run test generate lint bench

run:
	go run ./cmd/switchyard

test:
	scripts/test.sh

generate:
	eval "$$(scripts/tools.sh)" && rm -rf gen clients/typescript/gen && buf generate && buf generate --template buf.gen.ts.yaml

lint:
	eval "$$(scripts/tools.sh)" && buf lint && go vet ./...

bench:
	go run ./cmd/switchyard-bench -c 32 -d 10s
