"""Tables of the ring-size experiment and of the A/B: best MPI / variant (extend-add),
accrete / MPI table (DHT), median (range) over runs."""
import json,glob,os,statistics
import sys
d=sys.argv[1]
ea={}
for f in glob.glob(d+'/ea_*.json'):
    _,b,ring,m,r=os.path.basename(f)[:-5].split('_')
    j=json.load(open(f))
    for c in j['cases']:
        v=c['variants']; best=min(v['mpi_alltoallv']['median_s'],v['mpi_p2p']['median_s'])
        for var in ('accrete_rpc','accrete_put'):
            ea.setdefault((m,c['n'],var),{}).setdefault(b+'@'+ring,[]).append(best/v[var]['median_s'])
cfgs=['base@512K','new@512K','new@2M','new@8M']
print('| MPI | n | variant | '+' | '.join(cfgs)+' |')
for k in sorted(ea):
    print('| %s | %s | %s | '%k+' | '.join('%.2f (%.2f-%.2f)'%(statistics.median(ea[k][c]),min(ea[k][c]),max(ea[k][c])) if c in ea[k] else '-' for c in cfgs)+' |')
dh={}
for f in glob.glob(d+'/dht_*.json'):
    _,ring,m,r=os.path.basename(f)[:-5].split('_')
    res=json.load(open(f))['results']; base={x['value_bytes']:x for x in res if x['table']=='mpi'}
    for x in res:
        if x['table'] not in ('rpc','lz'): continue
        for ph,key in (('ins','inserts_per_s'),('find','finds_per_s')):
            dh.setdefault((m,x['table'],x['value_bytes'],ph),{}).setdefault(ring,[]).append(x[key]/base[x['value_bytes']][key])
rings=['512K','2M','8M']
print('| MPI | table | value | phase | '+' | '.join(rings)+' |')
for k in sorted(dh):
    print('| %s | %s | %s | %s | '%k+' | '.join('%.2f'%statistics.median(dh[k][c]) if c in dh[k] else '-' for c in rings)+' |')
