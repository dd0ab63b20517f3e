#!/usr/bin/env perl
# A hosted Sevens Arena bot in Perl (core modules only); the platform runs it as ./bot.pl.
# One JSON line per decision in on stdin, one JSON answer out on stdout (docs/STDIO.md).
# Sevens family: play the longest run; among single cards, keep 7s and cards next to them
# for last (they open rows for others). Sedma: take a trick that holds an ace or a ten when
# we can match; otherwise throw a card that is neither a point card nor a 7.
use strict;
use warnings;
use JSON::PP;

$| = 1;
my $json = JSON::PP->new->utf8(0);

sub rank_of { my ($card) = @_; return substr($card, 0, 1); }
sub is_point { my $r = rank_of($_[0]); return $r eq 'A' || $r eq 'T'; }

sub choose_sevens {
    my ($legal) = @_;
    my @cards = grep { $_ ne 'pass' } @$legal;
    return $legal->[0] unless @cards;
    my %order = map { $_ => index('A23456789TJQK', $_) } split //, 'A23456789TJQK';
    my @sorted = sort {
        (($b =~ tr/+//) <=> ($a =~ tr/+//))
          || (abs($order{rank_of($b)} - 6) <=> abs($order{rank_of($a)} - 6))
    } @cards;
    return $sorted[0];
}

sub choose_sedma {
    my ($legal, $obs) = @_;
    my @trick = map { $_->{card} } @{ $obs->{trick} || [] };
    my @plain = grep { rank_of($_) ne '7' && !is_point($_) } @$legal;
    if (@trick) {
        my $led = rank_of($trick[0]);
        if (grep { is_point($_) } @trick) {
            my @match = grep { rank_of($_) eq $led } @$legal;
            @match = grep { rank_of($_) eq '7' } @$legal unless @match;
            return $match[0] if @match;
        }
    }
    return @plain ? $plain[0] : $legal->[0];
}

while (my $line = <STDIN>) {
    my $msg = eval { $json->decode($line) };
    if (!$msg) {
        print STDERR "smart.pl: cannot read line: $@";
        next;
    }
    next unless ($msg->{type} // '') eq 'turn';
    my $legal = $msg->{legal_actions};
    my $obs = $msg->{observation} || {};
    my $action = ($msg->{game} // '') eq 'sedma'
      ? choose_sedma($legal, $obs)
      : choose_sevens($legal);
    print $json->encode({
        match_id => $msg->{match_id}, attempt => $msg->{attempt},
        seq => $msg->{seq}, action => $action,
    }), "\n";
}
