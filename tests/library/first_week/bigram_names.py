"""A character bigram model of names, as in the makemore lecture: a count table with torch.zeros
and smoothing, then the same model as a single linear layer on F.one_hot inputs trained by
`W.data += -lr * W.grad`, and names sampled with torch.multinomial and a seeded Generator."""

import torch
import torch.nn.functional as F

WORDS = (
    "emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily elizabeth mila "
    "ella avery sofia camila aria scarlett victoria madison luna grace chloe penelope layla riley "
    "zoey nora lily eleanor hannah lillian addison aubrey ellie stella natalie zoe leah hazel"
).split()


def main():
    chars = sorted(set("".join(WORDS)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    V = len(stoi)

    N = torch.zeros((V, V), dtype=torch.int32)
    xs, ys = [], []
    for w in WORDS:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            N[stoi[ch1], stoi[ch2]] += 1
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs, ys = torch.tensor(xs), torch.tensor(ys)
    num = xs.nelement()

    P = (N + 1).float()
    P /= P.sum(1, keepdim=True)
    count_nll = -P[xs, ys].log().mean().item()

    g = torch.Generator().manual_seed(2147483647)
    W = torch.randn((V, V), generator=g, requires_grad=True)
    for k in range(200):
        xenc = F.one_hot(xs, num_classes=V).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdim=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        if k == 0:
            initial_loss = loss.item()
        W.grad = None
        loss.backward()
        W.data += -10 * W.grad

    names = []
    for _ in range(5):
        out, ix = [], 0
        while True:
            ix = torch.multinomial(P[ix], num_samples=1, replacement=True, generator=g).item()
            if ix == 0:
                break
            out.append(itos[ix])
        names.append("".join(out))
    print(names)
    draws = torch.multinomial(P[0], num_samples=4000, replacement=True, generator=g)
    freq = torch.bincount(draws, minlength=V).float() / 4000
    print(f"RESULT count_nll={count_nll:.5f} initial_loss={initial_loss:.4f} final_loss={loss.item():.4f} pairs={num}")
    assert (freq - P[0]).abs().max().item() < 0.05
    assert loss.item() < count_nll + 0.1 and loss.item() < 0.6 * initial_loss


if __name__ == "__main__":
    main()
